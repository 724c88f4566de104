"""Closed forms derived once with general laws (SymPy), shared by the derivations and the engines.

The derivation modules (:mod:`qderive.derivations`) display these results step by step
and check them; the numeric engines compile them (:mod:`qderive.numeric.compile`). Both
use the same expressions, derived here once and kept in the private cache
(:mod:`qderive.symbolic.cache`).
"""
