"""The ``qderive`` command line, generated from the registered models.

Subcommands: ``list``, ``derive``, ``verify``, ``eval``, ``sweep``, ``size``, ``optimize``,
``simulate``, ``codegen``, ``figure``. The options of every model subcommand come from
the model's fields (:mod:`.options`), its alternatives and its actions' request classes;
the measures and their JSON keys from its result record. Only the model named on the
command line is loaded, and its engine only when it runs, so a float64 ``qderive eval``
answers in well under a second. Every error a user can cause exits with status 2 and
one line naming the option and the constraint; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ...symbolic.errors import (
    BudgetError,
    NumericalError,
    ParameterError,
    QderiveError,
)
from ...symbolic.params import Kind, params_of
from . import options as _opt
from .output import format_record, format_value, payload

__all__ = ["main"]

MODEL_ACTIONS = ("eval", "sweep", "size", "optimize", "simulate", "codegen")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit status 2
        raise _UsageError(f"{self.prog}: {message}")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("qderive")
    except Exception:  # pragma: no cover
        return "unknown"


def _add_common(p, digits_help="compute with mpmath and give D correct significant digits (default: float64)"):
    p.add_argument("--digits", type=int, default=None, metavar="D", help=digits_help)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true",
                   help="no progress report (work past 2 s shows a bar on a terminal, a line every 10 s in a log)")
    _add_limit(p)


def _add_limit(p):
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="raise a size limit for this run (see `qderive list --limits`), e.g. capacity=1000000")


def _models():
    from ...symbolic.models import registered_models

    return registered_models()


def _figures() -> dict:
    """Figure name -> function(out_png, out_csv), collected from the modules of qderive.derivations.figures."""
    import importlib
    import pkgutil

    from .. import figures

    out = {}
    for info in pkgutil.iter_modules(figures.__path__):
        module = importlib.import_module(f"{figures.__name__}.{info.name}")
        out.update(getattr(module, "FIGURES", {}))
    return out


def _build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="qderive", description="Derive, verify, export and evaluate queueing closed forms.")
    parser.add_argument("--version", action="version", version=f"qderive {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("list", help="list the registered models, figures and limits; with MODEL, what it computes")
    p.add_argument("name", nargs="?", default=None, metavar="MODEL",
                   help="print the model's support matrix: which values of each option each subcommand and each "
                        "response measure computes (and why not)")
    p.add_argument("--limits", action="store_true", help="show the size limits and their defaults")

    p = sub.add_parser("derive", help="print a derivation (pretty, LaTeX or Markdown)")
    p.add_argument("name", help="model name, see `qderive list`")
    p.add_argument("--latex", metavar="FILE", help="write a standalone .tex document (- for the standard output)")
    p.add_argument("--fragment", action="store_true", help="with --latex: the body only, to \\input into a paper")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown page (- for the standard output)")
    p.add_argument("--print-latex", action="store_true", help="print the steps as LaTeX instead of pretty text")
    _paper_options(p)
    _add_limit(p)
    p.add_argument("--wait-moments", type=int, metavar="K",
                   help="also derive the moments E W^k, k <= K, of the waiting time (models with a waiting-time "
                        "transform, e.g. vacation-infinite)")

    p = sub.add_parser("verify", help="run every registered derivation's checks")
    p.add_argument("names", nargs="*", help="models to verify (default: all)")
    p.add_argument("--digits", type=int, default=50, help="working digits of the high-precision checks (default 50)")
    p.add_argument("--simulate", action="store_true",
                   help="also compare each model with a seeded simulation (joint 99%% intervals)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="run the checks in N processes (default: the cores available to this process; 1: in this "
                        "process). The CPU time stays, the wall time drops; the results are the same.")
    p.add_argument("--quiet", action="store_true",
                   help="no progress report (a bar on a terminal, a line every 10 s in a log; off under --json)")
    _add_limit(p)  # --digits is bounded by the limit digits

    p = sub.add_parser("figure", help="draw a figure (PNG, PDF or SVG) and/or write its data (CSV)",
                       description="Draw a figure as PNG, PDF or SVG (the suffix of --out chooses) and/or write its "
                                   "data as CSV.")
    p.add_argument("name", help="figure name, see `qderive list`")
    p.add_argument("--out", metavar="FILE", help="draw the figure: FILE.png (200 dpi), FILE.pdf or FILE.svg (vector); "
                                                 'needs matplotlib (pip install "qderive[plot]")')
    p.add_argument("--csv", metavar="FILE.csv", help="write the figure's data")
    p.add_argument("--quiet", action="store_true",
                   help="no progress report (a bar on a terminal, a line every 10 s in a log)")

    requested, action = None, None
    for i, tok in enumerate(argv[:-1]):
        if tok in MODEL_ACTIONS:
            requested, action = argv[i + 1], tok
            break
    models = _models()
    for act, help_text in (("eval", "evaluate a model's measures"),
                           ("sweep", "evaluate a model on a grid of parameters (lists and ranges) into a CSV/Parquet"),
                           ("size", "smallest capacity / servers meeting a target"),
                           ("optimize", "optimise a model's control parameters"),
                           ("simulate", "discrete-event simulation with confidence intervals"),
                           ("codegen", "write a standalone numeric function for a measure (Python or C)")):
        p = sub.add_parser(act, help=help_text)
        msub = p.add_subparsers(dest="model", metavar="MODEL", parser_class=_Parser)
        msub.required = True
        for name, cls in sorted(models.items()):
            if not _supports(cls, act):
                continue
            if name != requested or act != action:
                msub.add_parser(name, help=f"(run `qderive {act} {name} --help`)")
                continue
            _model_parser(msub, act, cls)
    return parser


def _records_samples(cls) -> bool:
    """True when the model's simulator records waits and sojourns."""
    from ...numeric.simulation.stats import records_samples
    from .. import capabilities

    return capabilities.has(cls, "simulator") and records_samples(capabilities.load(cls, "simulator"))


def _supports(cls, act) -> bool:
    """True when the model offers the subcommand ``act`` (a consumer is registered for it; nothing imported)."""
    from .. import capabilities

    if act in ("size", "optimize") and not any(a.name == act for a in cls.actions):
        return False
    return all(capabilities.has(cls, role) for role in capabilities.VERBS[act])


def _action(cls, act):
    return next(a for a in cls.actions if a.name == act)


def _model_parser(msub, act, cls):
    summary = cls.summary
    if act in ("size", "optimize"):
        summary = f"{cls.summary}. {_action(cls, act).summary}"
    if act == "sweep":
        from .sweep import SWEEP_HELP

        summary = f"{cls.summary}. {SWEEP_HELP}"
    mp = msub.add_parser(cls.name, help=cls.summary, description=summary)
    if act == "codegen":
        mp.add_argument("--measure", help="measure key, as in `qderive eval NAME --json` (required unless --list)")
        mp.add_argument("--out", metavar="FILE", help="output file (.py, or .c with a .h beside it)")
        mp.add_argument("--list", action="store_true", help="list the measures this model generates code for")
        mp.add_argument("--lang", choices=("python", "c"), default="python",
                        help="python: numpy-only module (default); c: C99 source + header (closed forms)")
        if cls.codegen_options is not None:
            _opt.add_fields(mp, cls.codegen_options)
        _add_limit(mp)
        return
    omit, optional = (_action(cls, act).omit, _action(cls, act).optional) if act in ("size", "optimize") else ((), ())
    _opt.add_fields(mp, cls, omit=omit, alternatives=cls.alternatives, optional=optional, lists=act == "sweep")
    if act == "simulate":
        mp.add_argument("--json", action="store_true", help="print one JSON object")
        _add_limit(mp)
        if _records_samples(cls):
            _add_response_options(mp)
    elif act == "sweep":
        from .sweep import add_sweep_options

        mp.add_argument("--digits", type=int, default=None, metavar="D",
                        help="compute with mpmath and give D correct significant digits (default: float64, escalated "
                             "only where the precision policy flags a point)")
        _add_limit(mp)
        add_sweep_options(mp)
    else:
        _add_common(mp)
    if act == "optimize":
        from .sweep import add_executor_options

        add_executor_options(mp)
    if act in ("eval", "sweep"):
        laws = [(f, m) for f, m in cls.measures.measure_fields() if m.optional and m.kind.value == "distribution"]
        if laws:  # one --distribution for every law of the model
            mp.add_argument("--distribution", dest="include_distribution", action="store_true",
                            help="also give " + "; ".join(f"{f.name}: " + m.help.replace(" (--distribution)", "")
                                                          for f, m in laws))
        for f, m in cls.measures.measure_fields():
            if m.optional and m.kind.value != "distribution":
                mp.add_argument("--" + f.name.replace("_", "-"), dest=f"include_{f.name}", action="store_true",
                                help=f"also give {m.help}")
        from .. import capabilities

        if capabilities.has(cls, "response"):
            _add_response_options(mp, cls.response_flows)
        if act == "eval" and any(m.kind is Kind.TIME_LAW for _, m in params_of(cls)):
            _add_bootstrap_options(mp)
    if act in ("size", "optimize"):
        _opt.add_fields(mp, _action(cls, act).request)
    if act == "simulate":
        mp.add_argument("--customers", type=int, default=200_000, metavar="N",
                        help="customers served per replication, warm-up included (default 200000)")
        mp.add_argument("--replications", type=int, default=10, metavar="K", help="independent replications (default 10)")
        mp.add_argument("--seed", type=int, default=None, metavar="S", help="seed (the run is reproducible with it)")
        mp.add_argument("--warmup", default="0.1", metavar="FRACTION",
                        help="fraction of each replication's customers discarded as warm-up (default 0.1)")
        mp.add_argument("--quiet", action="store_true", help="no progress bar (also off under --json)")


def _add_bootstrap_options(mp) -> None:
    """``--bootstrap B``, ``--seed S``, ``--confidence C`` of ``eval`` (models with a time-law field)."""
    mp.add_argument("--bootstrap", type=int, default=None, metavar="B",
                    help="also give, beside each measure, its percentile interval over B resamples (with replacement) "
                         "of the samples of the model's empirical laws (the other options held as given: --load holds the load, "
                         "--rate the rate)")
    mp.add_argument("--seed", type=int, default=None, metavar="S",
                    help="with --bootstrap: the seed of the resampling (the run is reproducible with it; default: "
                         "drawn, and printed)")
    mp.add_argument("--confidence", default=None, metavar="C",
                    help="with --bootstrap: the confidence of the intervals, 0 < C < 1 (default 0.95)")


#: the response-time options of ``eval`` (models with a response law): option suffix -> help
_RESPONSE_OPTIONS = (
    ("tail", "T1,T2,...", "P({X} > T) for each time T (in the model's time unit); keys as given"),
    ("quantile", "Q1,Q2,...", "the smallest t with P({X} <= t) >= Q, for each level 0 < Q < 1; keys as given"),
    ("moments", "K", "the moments E {X}^k, k = 1..K"),
)


def _add_response_options(mp, flows: tuple = ()) -> None:
    """``--wait-tail``, ... and, per flow of the model's ``response_flows``, ``--wait-tail-<flow>``, ..."""
    for flow in (None, *flows):
        tail = "" if flow is None else "-" + flow.replace("_", "-")
        whose = "a random customer; for a finite or controlled model, an admitted one" if flow is None else (
            f"an admitted customer of {flow}")
        for kind, letter in (("wait", "W"), ("sojourn", "T")):
            what = "the waiting time W" if kind == "wait" else "the sojourn time T = W + own service"
            for suffix, metavar, text in _RESPONSE_OPTIONS:
                mp.add_argument(f"--{kind}-{suffix}{tail}", dest=f"response_{kind}_{suffix}{tail.replace('-', '_')}",
                                metavar=metavar, help=f"{what}: " + text.format(X=letter) + f" ({whose})")


def _response_options(args, flows: tuple = ()) -> dict:
    """The response-time options given, as keyword arguments of ``evaluate`` (texts kept as the keys)."""
    out = {}
    for flow in (None, *flows):
        end = "" if flow is None else "_" + flow
        for kind in ("wait", "sojourn"):
            for suffix, _, _ in _RESPONSE_OPTIONS:
                text = getattr(args, f"response_{kind}_{suffix}{end}", None)
                if text is None:
                    continue
                option = f"--{kind}-{suffix}{end.replace('_', '-')}"
                if suffix == "moments":
                    try:
                        k = int(text)
                    except ValueError:
                        k = None
                    if k is None or not 1 <= k <= 8:  # 0 would ask for nothing: refused, never ignored
                        raise ParameterError(option, "must be an integer from 1 to 8", text)
                    out[f"{kind}_moments{end}"] = k
                else:
                    parts = [p.strip() for p in text.split(",")]
                    if not all(parts):
                        raise ParameterError(option, "expects values separated by ',' (no empty ones)", text)
                    out[f"{kind}_{suffix}{end}"] = parts
    return out


# --------------------------------------------------------------------------------------
# Handlers
# --------------------------------------------------------------------------------------


def _model_from(args, cls, omit=()):
    values = _opt.parse_fields(args, cls, omit=omit, alternatives=cls.alternatives)
    if omit:
        return values
    return _build_model(cls, values)


def _build_model(cls, values):
    try:
        return cls.from_values(values)
    except ParameterError as err:
        raise _opt.rename_error(err, cls, cls.alternatives) from None


def _cmd_list(args) -> int:
    if args.name:
        return _list_model(args.name)
    if args.limits:
        from ...symbolic import limits

        doc = (limits.__doc__ or "").split("=====")[0]
        print(doc.strip().splitlines()[0])
        for name in limits.names():
            print(f"  {name.replace('_', '-'):<18} {getattr(limits.current(), name)}")
        return 0
    print("models (`qderive list MODEL`: what each subcommand and measure computes):")
    for name, cls in sorted(_models().items()):
        acts = [a for a in ("size", "optimize", "simulate", "codegen") if _supports(cls, a)]
        extra = f"  [{', '.join(acts)}]" if acts else ""
        print(f"  {name:<22} {cls.summary}{extra}")
    print("figures:")
    for name in sorted(_figures()):
        print(f"  {name}")
    return 0


def _list_model(name: str) -> int:
    """``qderive list MODEL``: the model's support matrix (:func:`qderive.derivations.capabilities.support_matrix`)."""
    from ...symbolic.models import model_class
    from ..capabilities import option_label, support_matrix

    cls = model_class(name)
    columns, rows = support_matrix(cls)
    print(f"{name}: {cls.summary}")
    print(f"subcommands and measures: {', '.join(columns)}")
    print("each field of the example changed to each kind of value; 'yes' where every column computes it:")
    for field, label, cells in rows:
        refused = [(c, cell) for c, cell in zip(columns, cells) if cell != "yes"]
        head = f"  {option_label(cls, field)} {label}"
        if not refused:
            print(f"{head:<44} yes")
            continue
        if all(cell.startswith("invalid") for _, cell in refused):
            print(f"{head:<44} {refused[0][1]}")
            continue
        ok = [c for c, cell in zip(columns, cells) if cell == "yes"]
        print(f"{head:<44} yes: {', '.join(ok) or '-'}")
        grouped: dict = {}
        for c, cell in refused:
            grouped.setdefault(cell, []).append(c)
        for cell, cols in grouped.items():
            print(f"{'':<46}{', '.join(cols)}: {cell}")
    return 0


def _derivation(name: str, **options):
    """The model's derivation; ``options`` (``wait_moments``) go to it if its function takes them."""
    import inspect

    from ...symbolic.models import model_class
    from .. import capabilities

    cls = model_class(name)
    if not capabilities.has(cls, "derivation"):
        raise ParameterError(f"model {name!r} has no registered derivation")
    make = capabilities.load(cls, "derivation")
    accepted = inspect.signature(make).parameters
    for key, value in options.items():
        if value is not None and key not in accepted:
            raise ParameterError("--" + key.replace("_", "-"), f"is not available for model {name!r}")
    try:
        return make(**{k: v for k, v in options.items() if v is not None})
    except ParameterError as err:
        if err.name in options:
            raise ParameterError("--" + err.name.replace("_", "-"), err.constraint, err.value) from None
        raise


def _check_output(path_text: str, option: str) -> Path:
    """An output path that can be written, checked before any work starts by opening it for writing.

    The file is opened for appending (an existing file is not truncated; one created by the check is removed
    again), so a name that is too long, a directory, a read-only or virtual file system (``/proc``) is refused
    at once with one line naming ``option``. A write that fails only later (``/dev/full``: no space left) is
    one line too (:func:`_write_output`)."""
    import errno

    if not path_text or not str(path_text).strip():
        raise ParameterError(option, "expects a file name", repr(path_text))
    if path_text == "-":  # the standard output, as Unix tools read "-"
        return "-"
    path = Path(path_text)
    try:
        if path.is_dir():
            raise ParameterError(option, "is a directory; give a file name", path_text)
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise ParameterError(option, "names a directory that does not exist", str(parent))
        existed = path.exists()
        with open(path, "ab"):
            pass
    except OSError as exc:
        why = {errno.ENAMETOOLONG: "the file name is too long", errno.EACCES: "permission denied",
               errno.EROFS: "the file system is read-only"}.get(exc.errno, exc.strerror or "it cannot be opened")
        raise ParameterError(option, f"cannot be written ({why})", path_text) from None
    if not existed:
        try:
            path.unlink()
        except OSError:
            pass
    return path


def _paper_options(p) -> None:
    """The options of ``derive`` that lay a derivation out for a paper (issue 27)."""
    p.add_argument("--section-level", choices=("section", "subsection", "none"), default=None,
                   help="heading level of the derivation (default: subsection in a --fragment, section in a "
                        "document; none: no heading)")
    p.add_argument("--label-prefix", metavar="P", default=None,
                   help="\\label{P:...} on every display (default: the model name)")
    p.add_argument("--source-tags", action="store_true",
                   help="tag the displays with the source's equation numbers (default in a document; in a "
                        "--fragment the host paper numbers them)")
    p.add_argument("--algorithms", action="store_true",
                   help="with --fragment: add the algorithm blocks (the preamble then needs algorithm and "
                        "algpseudocode)")
    p.add_argument("--provenance", action="store_true",
                   help="append how each step was verified and where it is reconstructed")
    p.add_argument("--bib", metavar="FILE", help="write the BibTeX entries the derivation cites (- for the standard output)")


def _paper_layout(args) -> dict:
    import re

    if args.label_prefix is not None and not re.fullmatch(r"[A-Za-z0-9:._-]+", args.label_prefix):
        raise ParameterError("--label-prefix", "may hold only letters, digits and : . _ -", args.label_prefix)
    return {"section_level": args.section_level, "label_prefix": args.label_prefix,
            "source_tags": True if args.source_tags else None, "algorithms": True if args.algorithms else None,
            "provenance": args.provenance}


def _write_output(path: Path, text: str, option: str) -> None:
    """Write ``text`` to ``path`` ("-": the standard output); a failure (no space left, an I/O error) is one line
    naming ``option``."""
    try:
        if path == "-":
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()
            return
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ParameterError(option, f"could not be written ({exc.strerror or exc})", str(path)) from None


def _cmd_derive(args) -> int:
    layout = _paper_layout(args)  # refuses a bad --label-prefix before any work
    latex = _check_output(args.latex, "--latex") if args.latex is not None else None
    markdown = _check_output(args.markdown, "--markdown") if args.markdown is not None else None
    bib = _check_output(args.bib, "--bib") if args.bib is not None else None
    if args.wait_moments is not None and args.wait_moments < 1:
        raise ParameterError("--wait-moments", "must be an integer >= 1", args.wait_moments)
    deriv = _derivation(args.name, wait_moments=args.wait_moments)
    if latex:
        _write_output(latex, deriv.latex(fragment=args.fragment, **layout), "--latex")
    if bib:
        from ..export.bibliography import bibtex
        from ..export.latex import cited_keys

        _write_output(bib, bibtex(cited_keys(deriv)), "--bib")
    if markdown:
        _write_output(markdown, deriv.markdown(), "--markdown")
    if not (latex or markdown or bib):
        if args.print_latex:
            for s in deriv.steps:
                print(f"% {s.label} {s.title}\n{s.latex(deriv.notation)}\n")
        else:
            print(deriv)
    return 0


def _verify_results(names: list, digits: int, simulate: bool, jobs: int, quiet: bool = False) -> list:
    """(model name, CheckResult) for every check of every model in ``names``, in the order of the serial run.

    With ``jobs`` > 1 (and fork available) the derivations are built and their checks run by ``jobs`` forked
    workers that take a model at a time and share its checks at the end (:mod:`.verify`); with 1, here, in turn.
    Progress (the checks done) goes through the one progress mechanism unless ``quiet``."""
    import multiprocessing

    from ...numeric.engines.progress import Progress
    from ...symbolic.models import model_class
    from .. import capabilities
    from .verify import run_parallel

    def model_checks(name):  # the derivation's checks, then the seeded simulation check if asked for
        checks = list(_derivation(name).all_checks())
        cls = model_class(name)
        if simulate and _supports(cls, "simulate") and cls.example is not None:
            from ..smoke import simulation_check

            checks.append(lambda digits: simulation_check(cls.example())(digits))
        return checks

    for name in names:  # refuse an unknown model or one without a derivation before any work
        if not capabilities.has(model_class(name), "derivation"):
            raise ParameterError(f"model {name!r} has no registered derivation")
    desc = "verify" if len(names) != 1 else f"verify {names[0]}"
    with Progress(None, "checks", desc=desc, quiet=quiet or None) as bar:
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            return run_parallel(names, model_checks, digits, jobs, bar)
        built = [(name, model_checks(name)) for name in names]
        bar.set_total(sum(len(checks) for _, checks in built))
        results = []
        for name, checks in built:
            for check in checks:
                results.append((name, check(digits)))
                bar.advance()
    return results


def _default_jobs() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _cmd_verify(args) -> int:
    names = args.names or [n for n, c in sorted(_models().items()) if _supports(c, "derive")]
    jobs = _default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise ParameterError("--jobs", "must be a positive integer (1: run every check in this process)", args.jobs)
    if args.digits < 1:  # the checks' working digits: 0 or fewer made every high-precision check fail (exit 1)
        raise ParameterError("--digits", "must be a positive integer (the working digits of the checks)", args.digits)
    from ...symbolic import limits

    limits.check("digits", args.digits, "--digits of verify: mpmath cost grows with the precision")
    rows, failed = [], False
    started = time.perf_counter()
    for name, result in _verify_results(names, args.digits, args.simulate, jobs, quiet=args.json or args.quiet):
        rows.append({"model": name, **result.as_dict()})
        failed |= not result.passed
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps({"digits": args.digits, "passed": not failed, "seconds": round(elapsed, 2), "checks": rows}))
    else:
        width = max([58, *(len(r["check"]) for r in rows)])  # full check names, never cut
        header = f"{'model':<20} {'check':<{width}} {'result':<6} {'digits':>6} {'time':>7}"
        print(header)
        print("-" * len(header))
        for r in rows:
            d = r["digits_agreed"]
            dig = "-" if d is None else d if isinstance(d, str) else f"{d:.0f}"
            print(f"{r['model']:<20} {r['check']:<{width}} {'ok' if r['passed'] else 'FAIL':<6} {dig:>6} "
                  f"{r['seconds']:>6.2f}s")
            if not r["passed"]:
                print(f"    {r['detail']}")
        print("-" * len(header))
        n_ok = sum(r["passed"] for r in rows)
        where = f", {jobs} processes" if jobs > 1 else ""
        print(f"{n_ok} passed, {len(rows) - n_ok} failed  ({elapsed:.1f} s{where})")
    return 1 if failed else 0


def _included(args, cls) -> tuple:
    """The optional measures asked for (``--distribution``: every distribution of the model, ...)."""
    return tuple(f.name for f, m in cls.measures.measure_fields()
                 if getattr(args, f"include_{f.name}", False)
                 or m.optional and m.kind.value == "distribution" and getattr(args, "include_distribution", False))


def _cmd_sweep(args) -> int:
    from ...symbolic.models import model_class
    from .sweep import cmd_sweep

    cls = model_class(args.model)
    response = _response_options(args, cls.response_flows)

    def describe(err):
        if isinstance(err, ParameterError):
            if err.name in response:
                err = ParameterError("--" + err.name.replace("_", "-"), err.constraint, err.value)
            err = _opt.rename_error(err, cls, cls.alternatives)
        return str(err)

    return cmd_sweep(args, cls, _included(args, cls), response, describe, _check_output(args.out, "--out"))


def _cmd_eval(args) -> int:
    from ...symbolic.models import model_class

    cls = model_class(args.model)
    values = _opt.parse_fields(args, cls, alternatives=cls.alternatives)
    model = _build_model(cls, values)
    include = _included(args, cls)
    response = _response_options(args, cls.response_flows)
    from ...numeric.engines.progress import Progress

    if getattr(args, "bootstrap", None) is None:
        for extra in ("seed", "confidence"):
            if getattr(args, extra, None) is not None:
                raise ParameterError(f"--{extra}", "is an option of --bootstrap B (give both)", getattr(args, extra))
    try:
        if getattr(args, "bootstrap", None) is not None:
            held = {a.name: values[a.name] for a in cls.alternatives if values.get(a.name) is not None}
            boot = _bootstrap(args, cls, model, include, response, held)
            record = boot.record
        else:
            boot = None
            with Progress(None, "", desc=f"eval {cls.name}", quiet=args.quiet or None, ticker=True):
                record = model.evaluate(args.digits, include=include, **response)
    except ParameterError as err:
        if err.name in response:
            raise ParameterError("--" + err.name.replace("_", "-"), err.constraint, err.value) from None
        raise
    doc = payload(record, include)
    if boot is not None:
        doc.update(boot.as_dict())
        doc["notes"] = [*doc.get("notes", ()), *boot.notes]
    print(json.dumps(doc) if args.json else format_record(doc))
    return 0


def _bootstrap(args, cls, model, include, response, held):
    """``eval --bootstrap B``: :func:`qderive.numeric.bootstrap.bootstrap` with the options as names; an
    alternative given (``--load``) is held, so each resample's field (the rate) follows its laws."""
    from ...numeric.bootstrap import bootstrap

    names = {f.name: _opt.option_of(f, m) for f, m in params_of(cls)}
    names.update({a.name: "--" + a.name.replace("_", "-") for a in cls.alternatives})
    names.update(bootstrap="--bootstrap", seed="--seed", confidence="--confidence")
    confidence = "0.95" if args.confidence is None else args.confidence
    try:
        return bootstrap(model, args.bootstrap, seed=args.seed, confidence=confidence, digits=args.digits,
                         include=include, quiet=args.quiet or None, names=names, hold=held,
                         **response)
    except ParameterError as err:
        if err.name in ("bootstrap", "seed", "confidence"):
            raise ParameterError(names[err.name], err.constraint, err.value) from None
        raise


def _cmd_action(args) -> int:
    from ...symbolic.models import model_class

    cls = model_class(args.model)
    act = _action(cls, args.command)
    values = _opt.parse_fields(args, cls, omit=act.omit, alternatives=cls.alternatives)
    request_values = _opt.parse_fields(args, act.request)
    try:
        request = act.request(**request_values)
    except ParameterError as err:
        raise _opt.rename_error(err, act.request) from None
    if args.digits is not None:
        from ...symbolic import limits

        limits.check("digits", args.digits, "mpmath cost grows with the precision")
    import contextlib
    import inspect

    from .. import capabilities

    _ask_action(cls, act, values, request)
    run = capabilities.load(cls, act.name)
    accepted = inspect.signature(run).parameters
    extra = {"progress": not (args.json or args.quiet)} if "progress" in accepted else {}
    with (_executor_of(args) if act.name == "optimize" else contextlib.nullcontext((None, 1))) as (pool, _):
        if pool is not None:
            if "executor" not in accepted:
                raise ParameterError("--workers/--executor", f"{act.name} {cls.name} runs in one process")
            extra["executor"] = pool
        try:
            result = run(values, request, args.digits, **extra)
        except ParameterError as err:
            raise _opt.rename_error(_opt.rename_error(err, cls, cls.alternatives), act.request) from None
    result = format_value(result, args.digits)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"  {k:>26} = {v}")
    return 0


def _ask_action(cls, act, values, request) -> None:
    """Ask the action's consumers (the action and the engine) before any work, with the model of the values
    given; the fields the action chooses itself are taken from the model's example."""
    from .. import capabilities

    example = cls.example() if cls.example is not None else None
    filled = dict(values)
    for f in getattr(example, "__dataclass_fields__", {}):
        if filled.get(f) is None and f in (*act.omit, *act.optional):
            filled[f] = getattr(example, f)
    try:
        model = cls.from_values(filled)
    except (ParameterError, TypeError):
        return  # the action itself reports what is missing or wrong
    try:
        capabilities.ask(model, act.name)
    except ParameterError as err:
        raise _opt.rename_error(err, cls, cls.alternatives) from None


def _executor_of(args):
    from .sweep import executor_of

    return executor_of(args)


def _cmd_simulate(args) -> int:
    from ...symbolic.models import model_class
    from ...symbolic.numbers import parse_number

    cls = model_class(args.model)
    model = _model_from(args, cls)
    warmup = parse_number(args.warmup, "--warmup")
    if not 0 <= warmup < 1:
        raise ParameterError("--warmup", "must lie in [0, 1)", args.warmup)
    from .. import capabilities

    response = _response_options(args)
    capabilities.ask(model, "simulate", tuple(response))
    simulate = capabilities.load(cls, "simulator")
    try:
        result = simulate(model, customers=args.customers, replications=args.replications, seed=args.seed,
                          warmup=float(warmup), quiet=args.quiet or args.json, **response)
    except ParameterError as err:
        if err.name in response:
            raise ParameterError("--" + err.name.replace("_", "-"), err.constraint, err.value) from None
        raise
    summary = result.summary()
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{args.model}: {summary['replications']} replications x {summary['customers_per_replication']} customers,"
          f" seed {summary['seed']}, {summary['seconds']:.2f} s ({summary['method']})")

    def line(key, est):
        ci = est["ci95"]
        ci_text = "undefined" if ci is None else f"[{ci[0]:.6g}, {ci[1]:.6g}]"
        print(f"  {key:>26} = {est['estimate']!s:<22} 95% CI {ci_text}")

    for key, est in summary["measures"].items():
        if isinstance(est, dict) and "estimate" not in est:  # a tail or quantile per point
            for point, e in est.items():
                line(f"{key}[{point}]", e)
        elif isinstance(est, list):  # moments
            for k, e in enumerate(est, start=1):
                line(f"{key}[{k}]", e)
        else:
            line(key, est)
    for note in summary["notes"]:
        print(f"note: {note}")
    return 0


def _cmd_codegen(args) -> int:
    import re

    from ...symbolic.models import model_class

    cls = model_class(args.model)
    request = None
    if cls.codegen_options is not None:
        values = _opt.parse_fields(args, cls.codegen_options)
        try:
            request = cls.codegen_options(**values)
        except ParameterError as err:
            raise _opt.rename_error(err, cls.codegen_options) from None
    if not args.list:
        if args.measure is None or args.out is None:
            raise ParameterError("codegen needs --measure M and --out FILE (or --list to see the measures)")
        out = _check_output(args.out, "--out")
        if args.lang == "c":
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", out.name) or out.suffix != ".c":
                raise ParameterError("--out", "for --lang c must be a file name ending in .c with letters, digits, "
                                     "'_', '-' and '.' only (it is written into #include)", args.out)
            _check_output(str(out.with_suffix(".h")), "--out (header)")
        elif out.suffix != ".py":
            raise ParameterError("--out", "must end in .py for --lang python", args.out)
    from .. import capabilities

    forms = capabilities.load(cls, "codegen")(request)
    if args.list:
        for measure in sorted(forms):
            print(measure)
        return 0
    if args.measure not in forms:
        have = ", ".join(sorted(forms)) or "none"
        raise ParameterError(f"--measure {args.measure!r}: {args.model} has generated code for: {have}")
    form = forms[args.measure]
    if args.lang == "python":
        _write_output(out, form.python_module(args.model), "--out")
    else:
        header_path = out.with_suffix(".h")
        header, source = form.c_sources(args.model, header_path.name)
        _write_output(header_path, header, "--out (header)")
        _write_output(out, source, "--out")
    return 0


def _cmd_figure(args) -> int:
    figures = _figures()
    if args.name not in figures:
        raise ParameterError(f"figure {args.name!r} is unknown; choose one of: {', '.join(sorted(figures))}")
    if not (args.out or args.csv):
        raise ParameterError("figure: give --out FILE.png and/or --csv FILE.csv")
    if args.out is not None:  # the format and matplotlib, before any figure data is computed
        from ..figures.style import check_output, require_matplotlib

        check_output(args.out)
        require_matplotlib()
    out = str(_check_output(args.out, "--out")) if args.out is not None else None
    csv = str(_check_output(args.csv, "--csv")) if args.csv is not None else None
    from ...numeric.engines.progress import Progress

    with Progress(None, "", desc=f"figure {args.name}", quiet=args.quiet or None, ticker=True):
        figures[args.name](out, csv)
    return 0


_HANDLERS = {"list": _cmd_list, "derive": _cmd_derive, "verify": _cmd_verify, "eval": _cmd_eval, "sweep": _cmd_sweep,
             "size": _cmd_action, "optimize": _cmd_action, "simulate": _cmd_simulate, "figure": _cmd_figure,
             "codegen": _cmd_codegen}


def _limits_from(argv_limits) -> dict:
    from ...symbolic import limits
    from ...symbolic.numbers import exact_int

    out = {}
    for item in argv_limits:
        for part in item.split(","):
            key, eq, value = part.partition("=")
            key = key.strip().replace("-", "_")
            if not eq:
                raise ParameterError("--limit", "expects NAME=VALUE", part)
            if key not in limits.names():
                raise ParameterError(f"--limit {part}: unknown limit {key!r}; the limits are: "
                                     f"{', '.join(n.replace('_', '-') for n in limits.names())}")
            out[key] = exact_int(value.strip(), f"--limit {key}", minimum=1)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 a failed check, 2 bad input or any other error).

    Every error is one line on stderr (``qderive: error: ...``); an unexpected internal exception too, with
    ``--debug`` (anywhere on the command line) to print its traceback instead."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        parser = _build_parser(argv)
        parser.add_argument("--debug", action="store_true",
                            help="on an internal error, print the Python traceback (anywhere on the line)")
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help, --version
            return int(done.code or 0)
        from ...symbolic import limits

        with limits.limits(**_limits_from(getattr(args, "limit", []))):
            return _HANDLERS[args.command](args)
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (ParameterError, BudgetError, NumericalError, QderiveError) as exc:
        return _one_line(f"qderive: error: {exc}", debug)
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # pragma: no cover - output piped into `head`
        sys.stderr.close()
        return 0
    except MemoryError:
        return _one_line("qderive: error: out of memory: lower the sizes asked for (or a --limit that was raised)", debug)
    except RecursionError:
        return _one_line("qderive: error: the input is nested too deeply to process", debug)
    except OSError as exc:  # a file that could not be read or written
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return _one_line(f"qderive: error: {where}{exc.strerror or 'input/output error'}", debug)
    except Exception as exc:  # noqa: BLE001 - the contract: never a traceback; one line, --debug for the rest
        return _one_line(f"qderive: error: internal error ({type(exc).__name__}); this is a bug in qderive, "
                         "please report it with the command line (rerun with --debug for the traceback)", debug)


def _one_line(message: str, debug: bool) -> int:
    """Print ``message`` as one line on stderr (and the traceback of the error being handled with ``--debug``);
    exit status 2."""
    if debug:
        import traceback

        traceback.print_exc(file=sys.stderr)
    print(" ".join(message.split()), file=sys.stderr)
    return 2
