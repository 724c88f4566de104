"""The one declaration of what the ``sip-retransmission`` engine computes: :func:`supports`.

:func:`supports` is the engine's capability hook: None when the engine computes the model, else a
:class:`~qderive.symbolic.capabilities.Refusal` naming the option and the reason. It aggregates the declarations of the
fixed point (the float64 scan, one inner unknown, the vacation sub-models' range, the size of the control chain) and
of the server routes (:func:`.routes.route_refusal`); it reads only the options, so a refusal comes before any work.
"""

from __future__ import annotations

from fractions import Fraction

from ....symbolic.capabilities import Refusal, limit_refusal
from ....symbolic.numbers import decimal_text
from .routes import route_refusal

__all__ = ["supports"]


def supports(model) -> Refusal | None:
    """None when :func:`~.fixed_point.solve` computes ``model`` (a ``SipRetransmissionModel``), else the refusal
    (option, reason) of the first declaration that excludes it: the fixed point's scan and sizes
    (:func:`_fixed_point_refusal`), the server routes' (:func:`.routes.route_refusal`; with a duplicate cost c < 1 or
    a service law per flow the server's service is a mixture, and at delta = 0 the plain server), and the fixed
    point's one inner unknown (a duplicate cost below 1 with a service law per flow would make two)."""
    refusal = _fixed_point_refusal(model)
    if refusal is not None:
        return refusal
    part = model.server
    mixture = part.duplicate_cost != 1 or part.law_per_flow
    refusal = route_refusal(part, mixture)
    if refusal is None and part.duplicate_cost != 1:
        refusal = route_refusal(part, False)
    if refusal is None and part.law_per_flow and part.duplicate_cost != 1:
        refusal = Refusal.of_option(
            "--service-non-invite", "with --duplicate-cost below 1 (two inner unknowns) is not "
            "computed: a service law per flow is computed with --duplicate-cost 1 (every room and "
            "control); the simulator runs it", part.service_non_invite.spec_text())
    return refusal


def _fixed_point_refusal(model) -> Refusal | None:
    """What the fixed point itself does not compute: rates beyond its float64 scan; a vacation outside the range of
    its sub-models; a control chain above the limit ``threshold``."""
    if model.rate > Fraction(10) ** 300:  # the scan runs in float64
        return Refusal.of_option("--rate", "must be at most 1e300 (the fixed point is scanned in float64)",
                                 decimal_text(model.rate))
    if model.rate_non_invite and model.rate + model.rate_non_invite > Fraction(10) ** 150:
        return Refusal.of_option(
            "--rate-non-invite", "with --rate must total at most 1e150 (the two-flow fixed point is "
            "scanned in float64)", decimal_text(model.rate_non_invite))
    part = model.server
    V = part.vacation
    if V is not None:
        ratio = V.moment(1) / part.service.moment(1)
        if not Fraction(1, 10**6) <= ratio <= 100:
            return Refusal.of_option(
                "--vacation", "mean must lie between 1e-6 and 100 times the service's mean (the vacation "
                f"sub-models are evaluated in that range; got {float(ratio):.3g} times): a shorter "
                "vacation is no vacation (--vacation none), a longer one answers nothing that arrives "
                "during it; the simulator runs it", V.spec_text())
    if part.thresholds is not None:
        refusal = limit_refusal("--thresholds", "threshold", part.thresholds[1],
                                "the control chain has about 2H states")
        if refusal is not None:
            return refusal
    return None
