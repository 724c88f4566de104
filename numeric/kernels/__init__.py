"""Numeric kernels: every algorithm of qderive, written once against an arithmetic context.

A kernel is a plain function ``f(ctx, ...)`` that imports nothing but numpy and math;
``ctx`` supplies the arithmetic: :data:`~qderive.numeric.kernels.context.FLOAT64`
(numpy float64, vectorised) or an mpmath context at any precision
(:func:`qderive.numeric.backend.mp_context`), exactly as mpmath's own functions receive
``ctx``. The engines (:mod:`qderive.numeric.engines`) call these functions; ``qderive
codegen`` copies their source verbatim into standalone modules
(:mod:`qderive.derivations.export.codegen`), so the generated code and the package run
the same algorithm. A test parses every module here and refuses any other import.
"""
