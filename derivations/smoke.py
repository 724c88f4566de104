"""``qderive verify --simulate``: the analytic measures of a model against a simulation.

Each command that supports simulation names a representative case in
``ModelCommand.example_args`` (command-line tokens). The case is evaluated in float64
and simulated with a fixed seed; every measure both sides report must lie in the
simulation's confidence interval at the joint level 99 % (Bonferroni over the
measures compared, so a correct model fails with probability below 1 %). Measures
whose interval is undefined or of zero width (an event never observed in the run)
are reported, not compared.
"""

from __future__ import annotations

import argparse

from .framework import Check

__all__ = ["simulation_check"]

SEED = 20131115  # the thesis defence date: fixed so the check is deterministic
CUSTOMERS = 200_000
REPLICATIONS = 10


def simulation_check(name: str, cmd) -> Check:
    """A :class:`Check` comparing ``cmd``'s analytic measures with a seeded simulation."""

    def run(digits):
        from qderive.numeric.simulate import simulate

        parser = argparse.ArgumentParser(prog=f"qderive eval {name}")
        cmd.add_arguments(parser)
        parser.add_argument("--digits", type=int, default=None)
        parser.add_argument("--json", action="store_true")
        cmd.add_simulate_arguments(parser)
        args = parser.parse_args(list(cmd.example_args))
        model = cmd.build(args)
        analytic = cmd.evaluate(model, None, args).measures
        sim_model, options = cmd.simulate(model, args)
        result = simulate(sim_model, CUSTOMERS, REPLICATIONS, SEED, quiet=True, **options)
        common = [k for k in result.measures if k in analytic and isinstance(analytic[k], (int, float))]
        comparable = []
        skipped = []
        for key in common:
            est = result.measures[key]
            ci = est.interval(0.95)
            if ci is None or ci[0] == ci[1]:
                skipped.append(key)
            else:
                comparable.append(key)
        level = 1 - 0.01 / max(len(comparable), 1)
        outside = []
        for key in comparable:
            lo, hi = result.measures[key].interval(level)
            if not (lo <= float(analytic[key]) <= hi):
                outside.append(f"{key}={float(analytic[key]):.6g} not in [{lo:.6g}, {hi:.6g}]")
        detail = (f"{len(comparable)} measures in their joint 99% simulation intervals "
                  f"({REPLICATIONS} x {CUSTOMERS} customers, seed {SEED})")
        if skipped:
            detail += f"; not compared (no spread observed): {', '.join(skipped)}"
        if outside:
            detail = "; ".join(outside)
        return not outside and bool(comparable), None, detail

    return Check(f"simulation smoke test ({' '.join(cmd.example_args)[:40]}...)", run)
