"""``qderive verify --simulate``: the analytic measures of a model against a seeded simulation.

Every model class with a ``simulator`` and an ``example()`` takes part: the example is
evaluated under the precision policy (``model.evaluate()``, float64) and simulated by the
model's own simulator (its registered ``simulator`` consumer) with a fixed seed. A model with a
response-time law also compares P(W > t) at the mean wait and twice it, the 90 % quantile,
E W, E W^2 and P(T > mean wait) with the simulator's sample measures. Every measure
both report must lie in the simulation's confidence interval at the joint level 99 %
(Bonferroni over the m measures compared: each interval at level 1 - 0.01/m, so a correct
model misses with probability below 1 %). A measure whose interval is undefined or of zero
width (an event never observed in the run) is reported, not compared.

**Two stages.** With a fixed seed a 1 % miss of a correct model would be permanent (measured for
``sip-retransmission``'s example: 152 seeds gave a z histogram that matches Student t(9), and the seed
SEED happens to be a 4.8-sigma draw of its goodput, while 1120 pooled replications put any bias below
0.002). So a miss is followed by one run with a second seed declared here in advance (:data:`SEED2`),
and the check fails only if that run misses too: a correct model fails with probability below 1e-4,
while a defect large enough to show at this size shows in both runs. The detail names both runs.
"""

from __future__ import annotations

from .framework import Check

__all__ = ["simulation_check", "SEED", "SEED2", "CUSTOMERS", "REPLICATIONS", "LEVEL"]

SEED = 20131115  # the thesis defence date: fixed so the check is deterministic
#: the second stage's seed (module docstring), declared in advance, independent of SEED's streams
SEED2 = 20130101
CUSTOMERS = 200_000
REPLICATIONS = 10
#: joint confidence level of the comparison
LEVEL = 0.99


def _comparable(value) -> bool:
    if isinstance(value, bool) or value is None or isinstance(value, (list, tuple, str)):
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _flat_response(measures: dict) -> dict:
    """``{"wait_tail": {"0.5": x}, "wait_moments": [a, b]}`` -> ``{"wait_tail[0.5]": x, "wait_moments[2]": b, ...}``."""
    out = {}
    for key, value in measures.items():
        items = value.items() if isinstance(value, dict) else ((str(k), v) for k, v in enumerate(value, start=1))
        for point, v in items:
            out[f"{key}[{point}]"] = v
    return out


def simulation_check(model, customers: int = CUSTOMERS, replications: int = REPLICATIONS, seed: int = SEED, *,
                     simulator=None) -> Check:
    """A :class:`Check` comparing ``model.evaluate()`` with a seeded run of the model's simulator (``simulator``:
    another function of the simulators' signature, e.g. a stand-in that checks the two-stage rule itself)."""
    from . import capabilities

    cls = type(model)
    if simulator is None and not capabilities.has(cls, "simulator"):
        raise TypeError(f"model {cls.name!r} has no simulator")

    def run(digits):
        record = model.evaluate()
        analytic = record.as_dict()
        response = {}
        from ..numeric.simulation.stats import records_samples

        simulate = simulator if simulator is not None else capabilities.load(cls, "simulator")
        offered = capabilities.has(cls, "response")
        mean_wait = analytic.get("mean_wait")
        if offered and records_samples(simulate) and not _comparable(mean_wait):
            mean_wait = model.evaluate(wait_moments=1).response["wait_moments"][0]  # a model without mean_wait
        if (offered and records_samples(simulate) and _comparable(mean_wait)
                and float(mean_wait) > 0):
            w = float(mean_wait)  # tails at the mean wait and twice it, the 90 % quantile, E W, E W^2
            response = {"wait_tail": [repr(w), repr(2 * w)], "wait_quantile": ["0.9"], "wait_moments": 2,
                        "sojourn_tail": [repr(w)]}
            if capabilities.refusal(model, "response", {"wait_tail", "sojourn_tail", "wait_quantile"}) is not None:
                response = {"wait_moments": 2}  # tails not computed for these laws (the response law says why)
            analytic.update(_flat_response(model.evaluate(**response).response))
        outside, detail = _compare(simulate(model, customers, replications, seed, quiet=True, **response),
                                   response, analytic, customers, replications, seed)
        if outside:  # the second stage (module docstring): fail only if a second seed misses too
            second = SEED2 if seed != SEED2 else SEED2 + 1
            outside2, detail2 = _compare(simulate(model, customers, replications, second, quiet=True, **response),
                                         response, analytic, customers, replications, second)
            if outside2 is None:
                return False, None, detail2
            detail = (f"seed {seed}: " + "; ".join(outside) + f"; second stage, seed {second}: "
                      + ("; ".join(outside2) if outside2 else detail2))
            return not outside2, None, detail
        return outside is not None, None, detail

    return Check(f"simulation smoke test ({str(model)[:60]})", run)


def _compare(result, response, analytic, customers, replications, seed):
    """(the measures outside their joint interval, detail) of one run; (None, detail) when nothing compares."""
    simulated = dict(result.measures)
    simulated.update(_flat_response({k: result[k] for k in response}))
    common = [k for k in simulated if k in analytic and _comparable(analytic[k])]
    comparable, skipped = [], []
    for key in common:
        ci = simulated[key].interval(0.95)
        (skipped if ci is None or ci[0] == ci[1] else comparable).append(key)
    level = 1 - (1 - LEVEL) / max(len(comparable), 1)
    outside = []
    for key in comparable:
        lo, hi = simulated[key].interval(level)
        value = float(analytic[key])
        if not lo <= value <= hi:
            outside.append(f"{key}={value:.6g} not in [{lo:.6g}, {hi:.6g}]")
    detail = (f"{len(comparable)} measures in their joint {LEVEL:.0%} simulation intervals "
              f"({replications} x {customers} customers, seed {seed})")
    if skipped:
        detail += f"; not compared (no spread observed): {', '.join(skipped)}"
    if not comparable:
        return None, detail + ": no measure to compare"
    return outside, detail
