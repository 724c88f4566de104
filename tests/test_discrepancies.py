"""Where the numbers do not confirm the documents (issue 14, item 7): each statement of the guides, recomputed.

* Figure 1 (thesis): the reduction factors loss(batch mean 5) / loss(batch mean 4) recomputed from the
  model at both ends of the load range (float64, r = 200) and from the committed CSV; the guide's numbers
  (13-891x M, 20-2184x E4, 23-2761x D, and the loads from which the factor is <= 100) parsed from the text.
* Seed 004: the optimal k at Lambda = 3 /s is 4 for t0 = 1.5v .. 5v, by the exact R(k) and by the
  paper's discretised sums (N = 10).
* Seed 001: the chain written with the seed's *queue* counts equals the package's model (system
  counts) with every threshold shifted by one (exact rational GTH on both).
* Thesis (6)/(7): the guide names the ambiguity; N = lambda l1 W holds exactly on the evaluated measures.
* Seed 002: the out-of-scope abstracts are named in docs/background.md, and no model claims them.
"""

from __future__ import annotations

import csv
import re
from fractions import Fraction as F
from pathlib import Path

import mpmath
import pytest

from conftest import cli
from qderive.derivations.figures.vacation import FIG1_LAWS, fig1_loads, fig1_model
from qderive.numeric.backend import FLOAT64
from qderive.numeric.engines.cluster import paper_discretised
from qderive.numeric.oracles.ctmc import build
from qderive.symbolic.batches import Geometric
from qderive.symbolic.laws.gamma import Erlang, Exponential
from qderive.symbolic.models import registered_models
from qderive.symbolic.models.redundant_cluster import RedundantCluster
from qderive.symbolic.models.two_flow import TwoFlowModel
from qderive.symbolic.models.vacation import VacationQueue

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _text(name: str) -> str:
    return " ".join((DOCS / name).read_text().split())


# -- Figure 1: the 10-100 times claim ---------------------------------------------------------------------


def _csv_factors():
    rows = list(csv.DictReader((DOCS / "figures" / "fig1.csv").open()))
    loss = {(r["batch_mean"], r["law"], float(r["load"])): float(r["loss_probability"]) for r in rows}
    out = {}
    for law in FIG1_LAWS:
        out[law] = sorted((load, v / loss[("4", law, load)]) for (mean, l, load), v in loss.items()
                          if l == law and mean == "5")
    return out


def test_figure1_reduction_factors_recomputed_and_stated():
    text = _text("guides/vacation-finite.md")
    stated = {law: (int(a), int(b)) for a, b, law in re.findall(r"\*\*(\d+)–(\d+)x \((M|E4|D)\)\*\*", text)}
    assert set(stated) == set(FIG1_LAWS)
    csv_factors = _csv_factors()
    lo_load, hi_load = fig1_loads(16)[0], fig1_loads(16)[-1]
    for law in FIG1_LAWS:
        factors = [f for _, f in csv_factors[law]]
        # the factor falls with the load: its range is set by the two ends
        assert all(a > b for a, b in zip(factors, factors[1:])), law
        ends = [fig1_model(5, law, x).evaluate().loss_probability / fig1_model(4, law, x).evaluate().loss_probability
                for x in (hi_load, lo_load)]
        # the model reproduces the CSV (1e-9: float64 results of 1e-16 losses, the CSV's own 1e-12 agreement)
        assert abs(ends[0] / factors[-1] - 1) < 1e-9 and abs(ends[1] / factors[0] - 1) < 1e-9
        assert stated[law] == (round(ends[0]), round(ends[1])), law
        assert ends[1] > 100  # outside the thesis's 10-100 at light load
    # "at most 100 only from rho_bar = 0.575 (M), 0.625 (E4), 0.65 (D) upwards"
    match = re.search(r"at most 100 only from \$\\bar\\rho\$ = ([\d.]+) \(M\), ([\d.]+) \(E4\), ([\d.]+) \(D\)", text)
    assert match, "the guide states the loads from which the factor is <= 100"
    for law, shown in zip(("M", "E4", "D"), match.groups()):
        first = min(load for load, f in csv_factors[law] if f <= 100)
        assert all(f <= 100 for load, f in csv_factors[law] if load >= first)
        assert abs(first - float(shown)) < 1e-12, law


# -- Seed 004: the optimal k does not move with t0 ------------------------------------------------------


def test_seed004_optimal_copies_is_four_for_every_deadline():
    text = _text("guides/redundant-cluster.md")
    assert "optimal k is **4 for every t₀ from 1.5v to 5v**" in text
    v = F(3, 10)
    for m in (F(3, 2), 2, F(5, 2), 3, F(7, 2), 4, F(9, 2), 5):
        exact, paper = {}, {}
        for k in range(1, 11):
            c = RedundantCluster(3, (10, 10), (v, v), m * v, k)
            exact[k] = c.evaluate().timely_probability
            paper[k] = 1 - (1 - float(paper_discretised(c, 10, FLOAT64))) ** k
        assert max(exact, key=exact.get) == 4, m
        assert max(paper, key=paper.get) == 4, m
    code, out, _ = cli(["optimize", "redundant-cluster", "--rate", "3", "--nodes", "10,10", "--service-times",
                        "0.3,0.3", "--deadline", "1.5", "--max-copies", "10", "--json"])
    assert code == 0 and '"copies": 4' in out


# -- Seed 001: queue counts vs system counts ------------------------------------------------------------


def _queue_count_chain(lam, mu, Lq, Hq, Rq):
    """Seed 001's rules with the queue length q (waiting messages, the one in service not counted), FIFO:
    mode 0 -> 2 when an accepted arrival makes q > Hq; 2 -> 1 when a departure makes q = Hq; 1 -> 0 when a
    departure makes q < Lq; a buffer of Rq waiting places; mode 0 accepts both classes, 1 non-INVITE only."""

    def waiting(seq):
        return max(len(seq) - 1, 0)

    def moves(state):
        mode, seq = state
        for c in (1, 2):
            accepts = mode == 0 or (mode == 1 and c == 2)
            new = seq + (c,)
            if accepts and waiting(new) <= Rq:
                yield (2 if waiting(new) > Hq else mode, new), lam[c - 1]
        if seq:
            rest = seq[1:]
            q = waiting(rest)
            new_mode = 1 if (mode == 2 and q == Hq) else 0 if (mode == 1 and q < Lq) else mode
            yield (new_mode, rest), mu[seq[0] - 1]

    return build((0, ()), moves)


def test_seed001_queue_thresholds_are_system_thresholds_plus_one():
    assert "seed 001 counts the queue: its thresholds Lq, Hq, Rq are --thresholds Lq+1,Hq+1,Rq+1" in \
        TwoFlowModel.summary
    assert "thresholds $(L_q, H_q, R_q)$, $L_q\\ge1$, are `--thresholds` $L_q+1,H_q+1,R_q+1$" in \
        _text("guides/two-flow.md")
    lam, mu = (F(3, 5), F(2)), (F(1), F(5))
    Lq, Hq, Rq = 1, 3, 4
    chain = _queue_count_chain(lam, mu, Lq, Hq, Rq)
    pi = chain.stationary_exact()
    model = TwoFlowModel(*lam, *mu, Lq + 1, Hq + 1, Rq + 1)
    got = model.evaluate(40)
    # PASTA: an INVITE is refused in modes 1, 2 or with a full buffer; the mode probabilities; the mean number
    refused1 = sum(x for (m, seq), x in zip(chain.states, pi) if m != 0 or len(seq) - 1 >= Rq)
    modes = [sum(x for (m, _), x in zip(chain.states, pi) if m == k) for k in range(3)]
    number = sum(len(seq) * x for (_, seq), x in zip(chain.states, pi))
    for key, want in (("rejection_invite", refused1), ("p_mode0", modes[0]), ("p_mode1", modes[1]),
                      ("p_mode2", modes[2]), ("mean_number", number)):
        with mpmath.workdps(60):
            assert abs(mpmath.mpf(got[key]) / (mpmath.mpf(want.numerator) / want.denominator) - 1) < 1e-38, key
    # and not with the unshifted thresholds (the shift matters)
    unshifted = TwoFlowModel(*lam, *mu, Lq, Hq, Rq).evaluate()
    assert abs(unshifted["p_mode0"] / float(modes[0]) - 1) > 0.01


# -- Thesis (6)/(7) --------------------------------------------------------------------------------


def test_thesis_6_7_labels_noted_and_little_holds():
    assert "The labels (6) and (7) are ambiguous." in _text("guides/vacation-infinite.md")
    assert "which of (6), (7) is W and which N" in VacationQueue.summary
    model = VacationQueue.from_load(F(3, 5), Geometric(5), Erlang(4, F(3, 200)), Exponential(F(3, 40)))
    got = model.evaluate()  # exact rationals rounded once: Little holds to the last place
    assert abs(got["mean_queue_length"] / (float(model.rate * model.batch.mean) * got["mean_wait"]) - 1) < 1e-15


# -- Seed 002: the out-of-scope abstracts -----------------------------------------------------------


OUT_OF_SCOPE = {
    "A discrete-time queueing system with optional LCFS discipline": ("lcfs", "discrete"),
    "A Discrete-Time Queueing System With Different Types Of Displacement": ("displacement", "negative"),
    "Threshold-based queuing system for performance analysis of cloud computing system with dynamic scaling":
        ("cloud",),
    "A two-priority queueing system with trunk reservation": ("trunk",),
}


def test_seed002_out_of_scope_abstracts_are_named():
    text = _text("background.md")
    assert "**Out of scope**" in text
    for title, words in OUT_OF_SCOPE.items():
        assert title in text, title
        for name, cls in registered_models().items():
            described = f"{name} {cls.summary}".lower()
            assert not any(w in described for w in words), (name, title)
    seeds = Path("/work/shared/seeds")
    found = sorted(seeds.glob("002_*.txt")) if seeds.is_dir() else []
    if not found:
        pytest.skip("the seed file is not available here")
    seed = found[0].read_text()
    for title in OUT_OF_SCOPE:
        assert title in seed, title
