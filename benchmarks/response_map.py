"""Which response-time questions are computed and which are refused, per law pair and room (issue 28 item 1).

For every service law x vacation law of the list below and both rooms (``vacation-infinite``, ``vacation-finite``,
r = 20, partial admission, multiple vacations), the wait's :class:`~qderive.numeric.response.ResponseLaw` is built
and asked whether its tails can be computed (a smooth transform, or the law's own exact ``tails``) -- the same test
``response.tails`` makes before any work. Moments are computed for every law (the symbolic moments at the laws'
exact moments). Prints a Markdown table (cheap: no tail is computed)::

    python benchmarks/response_map.py
"""

from __future__ import annotations

from fractions import Fraction as F

import qderive as qd

SERVICES = {
    "exp": qd.Exponential(F(1, 100)),
    "Erlang-3": qd.Erlang(3, F(1, 100)),
    "gamma 0.7": qd.Gamma(F(7, 10), F(1, 100)),
    "hyperexp": qd.HyperExponential((F(1, 2), F(1, 2)), (F(1, 200), F(3, 200))),
    "lognormal": qd.LogNormal(F(1, 100), F(2)),
    "constant": qd.Deterministic(F(1, 100)),
    "uniform": qd.Uniform(F(1, 200), F(3, 200)),
    "empirical": qd.Empirical((F(1, 200), F(1, 100), F(3, 100))),
}
VACATIONS = {
    "none": None,
    "exp": qd.Exponential(F(1, 20)),
    "Erlang-2": qd.Erlang(2, F(1, 20)),
    "gamma 0.7": qd.Gamma(F(7, 10), F(1, 20)),
    "lognormal": qd.LogNormal(F(1, 20), F(2)),
    "constant": qd.Deterministic(F(1, 20)),
    "uniform": qd.Uniform(F(1, 40), F(3, 40)),
    "empirical": qd.Empirical((F(1, 40), F(1, 20), F(1, 10))),
}


def method(law) -> str:
    if law.tails is not None:
        return "exact sum"
    return "inversion" if law.smooth else "refused"


def main():
    rate = F(10)
    print("| service \\ vacation | " + " | ".join(VACATIONS) + " |")
    print("|---" * (len(VACATIONS) + 1) + "|")
    for room in ("infinite", "finite"):
        for sname, service in SERVICES.items():
            cells = []
            for vname, vacation in VACATIONS.items():
                if room == "infinite":
                    model = qd.VacationQueue(rate, qd.Geometric(F(2)), service, vacation)
                else:
                    if vacation is None:
                        cells.append("-")
                        continue
                    model = qd.FiniteVacationQueue(rate, qd.Geometric(F(2)), service, vacation, 20)
                try:
                    cells.append(method(model.response.load()(model)["wait"]))
                except Exception as exc:  # noqa: BLE001 - a map: show what happened
                    cells.append(f"error: {type(exc).__name__}")
            print(f"| {room}: {sname} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
