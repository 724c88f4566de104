"""Model engines: a model's measures in one arithmetic context, from the kernels.

Each model class names its engine (``Model.engine``); an engine turns the exact model
into kernel inputs, calls the kernels of :mod:`qderive.numeric.kernels` and returns the
measures. The precision policy (:mod:`qderive.numeric.precision`) decides the contexts.
"""
