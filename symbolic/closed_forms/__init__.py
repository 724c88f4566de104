"""Closed forms derived once with general laws (SymPy), shared by the derivations and the engines.

The derivation modules (the derivation layer) display these results step by step
and check them; the numeric engines compile them (``compile`` of the numeric layer). Both
use the same expressions, derived here once and kept in the private cache
(:mod:`qderive.symbolic.cache`).
"""
