"""The numeric layer. Importing it registers the float64 survival functions of its kernel ``survival`` with the laws
(:data:`qderive.symbolic.laws.base.FLOAT64_SURVIVAL`): one implementation for the laws and for generated code."""

from ..symbolic.laws.base import FLOAT64_SURVIVAL as _REGISTRY
from .kernels.survival import gamma_survival as _gamma_survival
from .kernels.survival import lognormal_survival as _lognormal_survival
from .kernels.survival import uniform_survival as _uniform_survival
from .kernels.survival import uniform_survival_bound as _uniform_survival_bound

_REGISTRY.update(gamma_survival=_gamma_survival, lognormal_survival=_lognormal_survival,
                 uniform_survival=_uniform_survival, uniform_survival_bound=_uniform_survival_bound)
