"""Independent oracles: chains built from a model's *definition* (never from its formulas).

:mod:`.ctmc` is the one CTMC builder (states found by search from an initial state,
exact rates) with one solver at every precision (GTH, exact in rationals or at any
mpmath precision; first-passage times by the subtraction-free M-matrix solve).
The model modules here describe each model's transitions; the tests and ``qderive verify``
compare the engines with them.
"""
