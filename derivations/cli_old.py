"""The ``qderive`` command line.

Subcommands: ``list``, ``derive``, ``verify``, ``eval``, ``size``, ``optimize``,
``figure``, ``simulate``. Model modules are imported lazily (see
:mod:`qderive.derivations.command`), so a float64 ``qderive eval`` answers in well
under a second. Bad input exits with status 2 and one line naming the parameter
and the constraint; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from qderive.symbolic._exact import ParameterError

from .command import FIGURES, MODELS, Evaluation, available_models, load_command, load_figure

__all__ = ["main", "format_value"]


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit status 2
        raise _UsageError(f"{self.prog}: {message}")


def format_value(value, digits: int | None):
    """A measure for JSON: a float (float64 mode) or a string with ``digits`` significant digits."""
    import mpmath

    if isinstance(value, (list, tuple)):
        return [format_value(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: format_value(v, digits) for k, v in value.items()}
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if digits is None:
        f = float(value)
        if math.isnan(f):
            raise RuntimeError("internal error: a measure evaluated to NaN")
        return f if math.isfinite(f) else ("inf" if f > 0 else "-inf")
    with mpmath.workdps(digits + 10):  # mpf(value) rounds to the working precision: keep every digit
        return mpmath.nstr(mpmath.mpf(value), digits, min_fixed=-4, max_fixed=digits)


def _parameters_for_json(params: dict) -> dict:
    out = {}
    for key, value in params.items():
        out[key] = value if isinstance(value, (int, str, bool)) or value is None else str(value)
    return out


def _print_evaluation(ev: Evaluation, digits: int | None, as_json: bool) -> None:
    payload = {
        "model": ev.model,
        "parameters": _parameters_for_json(ev.parameters),
        "precision": "float64" if digits is None else digits,
        "measures": {k: format_value(v, digits) for k, v in ev.measures.items()},
    }
    if ev.notes:
        payload["notes"] = list(ev.notes)
    if as_json:
        print(json.dumps(payload))
        return
    print(f"{ev.model}  ({'float64' if digits is None else f'{digits} digits'})")
    for key, value in ev.parameters.items():
        print(f"  {key:>24} = {value}")
    print()
    for key, value in payload["measures"].items():
        print(f"  {key:>24} = {value}")
    for note in ev.notes:
        print(f"note: {note}")


def _model_parser(sub, action: str, help_text: str):
    p = sub.add_parser(action, help=help_text)
    msub = p.add_subparsers(dest="model", metavar="MODEL", parser_class=_Parser)
    msub.required = True
    return p, msub


def _add_precision(p):
    p.add_argument("--digits", type=int, default=None, metavar="D",
                   help="compute with mpmath and print D significant digits (default: float64)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_simulation_options(p):
    p.add_argument("--customers", type=int, default=200_000, metavar="N",
                   help="customers served per replication, warm-up included (default 200000)")
    p.add_argument("--replications", type=int, default=10, metavar="K", help="independent replications (default 10)")
    p.add_argument("--seed", type=int, default=None, metavar="S", help="seed (the run is reproducible with it)")
    p.add_argument("--warmup", default="0.1", metavar="FRACTION",
                   help="fraction of each replication's customers discarded as warm-up (default 0.1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (also off under --json)")


def _build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="qderive", description="Derive, verify, export and evaluate queueing closed forms.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    sub.add_parser("list", help="list the registered models and figures")

    p = sub.add_parser("derive", help="print a derivation (pretty, LaTeX or Markdown)")
    p.add_argument("name", help="model name, see `qderive list`")
    p.add_argument("--latex", metavar="FILE", help="write a standalone .tex document")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown page")
    p.add_argument("--print-latex", action="store_true", help="print the steps as LaTeX instead of pretty text")

    p = sub.add_parser("verify", help="run every registered derivation's checks")
    p.add_argument("names", nargs="*", help="models to verify (default: all)")
    p.add_argument("--digits", type=int, default=50, help="working digits of the high-precision checks (default 50)")
    p.add_argument("--simulate", action="store_true",
                   help="also compare each model with a seeded simulation (joint 99%% intervals)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("codegen", help="write a standalone numeric function for a measure (Python or C)")
    p.add_argument("name", help="model name")
    p.add_argument("--measure", help="measure key, as in `qderive eval NAME --json` (required unless --list)")
    p.add_argument("--out", metavar="FILE", help="output file (.py, or .c with a .h beside it; required unless --list)")
    p.add_argument("--list", action="store_true", help="list the measures this model generates code for, and exit")
    p.add_argument("--lang", choices=("python", "c"), default="python",
                   help="python: numpy-only module (default); c: C99 source + header (closed-form measures)")
    codegen_parser = p

    p = sub.add_parser("figure", help="draw a figure (PNG) and/or write its data (CSV)")
    p.add_argument("name", choices=sorted(FIGURES))
    p.add_argument("--out", metavar="FILE.png")
    p.add_argument("--csv", metavar="FILE.csv")

    # Model subcommands: only the model named on the command line is imported.
    requested, requested_action = None, None
    for i, tok in enumerate(argv[:-1]):
        if tok in ("eval", "size", "optimize", "simulate", "codegen"):
            requested, requested_action = argv[i + 1], tok
            break
    if requested in MODELS and requested_action == "codegen":
        load_command(requested).add_codegen_arguments(codegen_parser)
    for action, help_text in (
        ("eval", "evaluate a model's measures"),
        ("size", "smallest capacity / servers meeting a target"),
        ("optimize", "optimise a model's control parameters"),
        ("simulate", "discrete-event simulation with confidence intervals"),
    ):
        _, msub = _model_parser(sub, action, help_text)
        names = [requested] if requested in MODELS else list(MODELS)
        for name in names:
            if requested != name:
                msub.add_parser(name, help="(run `qderive %s %s --help`)" % (action, name))
                continue
            cmd = load_command(name)
            mp_ = msub.add_parser(name, help=cmd.summary, description=cmd.summary)
            cmd.add_arguments(mp_)
            _add_precision(mp_)
            if action == "size":
                cmd.add_size_arguments(mp_)
            elif action == "optimize":
                cmd.add_optimize_arguments(mp_)
            elif action == "simulate":
                _add_simulation_options(mp_)
                cmd.add_simulate_arguments(mp_)
    return parser


def _cmd_list(args) -> int:
    print("models:")
    for name in available_models():
        cmd = load_command(name)
        actions = [a for a in ("size", "optimize", "simulate") if cmd.supports(a)]
        extra = f"  [{', '.join(actions)}]" if actions else ""
        print(f"  {name:<22} {cmd.summary}{extra}")
    print("figures:")
    for name in sorted(FIGURES):
        print(f"  {name}")
    return 0


def _derivation_or_fail(name: str):
    if name not in MODELS:
        raise ParameterError(f"model {name!r} is unknown; choose one of: {', '.join(available_models())}")
    deriv = load_command(name).derivation()
    if deriv is None:
        raise ParameterError(f"model {name!r} has no registered derivation")
    return deriv


def _cmd_derive(args) -> int:
    deriv = _derivation_or_fail(args.name)
    wrote = False
    if args.latex:
        from .latex_export import derivation_document

        with open(args.latex, "w", encoding="utf-8") as fh:
            fh.write(derivation_document(deriv))
        wrote = True
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(deriv.markdown())
        wrote = True
    if not wrote:
        if args.print_latex:
            for s in deriv.steps:
                print(f"% {s.label} {s.title}\n{s.latex()}\n")
        else:
            print(deriv)
    return 0


def _cmd_verify(args) -> int:
    names = args.names or available_models()
    rows = []
    failed = False
    started = time.perf_counter()
    for name in names:
        deriv = _derivation_or_fail(name)
        results = deriv.verify(args.digits)
        cmd = load_command(name)
        if args.simulate and cmd.supports("simulate") and cmd.example_args:
            from .smoke import simulation_check

            results.append(simulation_check(name, cmd)(args.digits))
        for result in results:
            rows.append({"model": name, **result.as_dict()})
            failed |= not result.passed
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps({"digits": args.digits, "passed": not failed, "seconds": round(elapsed, 2), "checks": rows}))
    else:
        header = f"{'model':<20} {'check':<58} {'result':<6} {'digits':>6} {'time':>7}"
        print(header)
        print("-" * len(header))
        for r in rows:
            d = r["digits_agreed"]
            dig = "-" if d is None else d if isinstance(d, str) else f"{d:.0f}"
            status = "ok" if r["passed"] else "FAIL"
            print(f"{r['model']:<20} {r['check'][:58]:<58} {status:<6} {dig:>6} {r['seconds']:>6.2f}s")
            if not r["passed"]:
                print(f"    {r['detail']}")
        print("-" * len(header))
        n_ok = sum(r["passed"] for r in rows)
        print(f"{n_ok} passed, {len(rows) - n_ok} failed  ({elapsed:.1f} s)")
    return 1 if failed else 0


def _cmd_eval(args) -> int:
    cmd = load_command(args.model)
    model = cmd.build(args)
    ev = cmd.evaluate(model, args.digits, args)
    _print_evaluation(ev, args.digits, args.json)
    return 0


def _cmd_action(action):
    def run(args) -> int:
        cmd = load_command(args.model)
        if not cmd.supports(action):
            raise ParameterError(f"model {args.model!r} does not support `qderive {action}`")
        result = getattr(cmd, action)(args)
        digits = getattr(args, "digits", None)
        result = {k: format_value(v, digits) for k, v in result.items()}
        if args.json:
            print(json.dumps(result))
        else:
            for k, v in result.items():
                print(f"  {k:>24} = {v}")
        return 0

    return run


def _cmd_simulate(args) -> int:
    from qderive.numeric.simulate import simulate

    from .cli_args import parse_number

    cmd = load_command(args.model)
    if not cmd.supports("simulate"):
        raise ParameterError(f"model {args.model!r} does not support `qderive simulate`")
    model = cmd.build(args)
    sim_model, options = cmd.simulate(model, args)
    warmup = parse_number(args.warmup, "--warmup")
    result = simulate(sim_model, args.customers, args.replications, args.seed,
                      warmup=float(warmup), quiet=args.quiet or args.json, **options)
    summary = result.summary()
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{args.model}: {summary['replications']} replications x {summary['customers_per_replication']} customers,"
          f" seed {summary['seed']}, {summary['seconds']:.2f} s ({summary['method']})")
    for key, est in summary["measures"].items():
        ci = est["ci95"]
        ci_text = "undefined" if ci is None else f"[{ci[0]:.6g}, {ci[1]:.6g}]"
        print(f"  {key:>24} = {est['estimate']!s:<22} 95% CI {ci_text}")
    for note in summary["notes"]:
        print(f"note: {note}")
    return 0


def _cmd_codegen(args) -> int:
    from pathlib import Path

    from .codegen import c_sources, python_module

    if args.name not in MODELS:
        raise ParameterError(f"model {args.name!r} is unknown; choose one of: {', '.join(available_models())}")
    forms = load_command(args.name).codegen_forms(args)
    if args.list:
        for measure in sorted(forms):
            print(measure)
        return 0
    if args.measure is None or args.out is None:
        raise ParameterError("codegen needs --measure M and --out FILE (or --list to see the measures)")
    if args.measure not in forms:
        have = ", ".join(sorted(forms)) or "none"
        raise ParameterError(f"--measure {args.measure!r}: {args.name} has generated code for: {have}")
    out = Path(args.out)
    form = forms[args.measure]
    if args.lang == "python":
        out.write_text(python_module(args.name, form), encoding="utf-8")
    else:
        header_path = out.with_suffix(".h")
        header, source = c_sources(args.name, form, header_path.name)
        header_path.write_text(header, encoding="utf-8")
        out.write_text(source, encoding="utf-8")
    return 0


def _cmd_figure(args) -> int:
    if not (args.out or args.csv):
        raise ParameterError("figure: give --out FILE.png and/or --csv FILE.csv")
    load_figure(args.name)(args.out, args.csv)
    return 0


_HANDLERS = {
    "list": _cmd_list,
    "derive": _cmd_derive,
    "verify": _cmd_verify,
    "eval": _cmd_eval,
    "size": _cmd_action("size"),
    "optimize": _cmd_action("optimize"),
    "simulate": _cmd_simulate,
    "figure": _cmd_figure,
    "codegen": _cmd_codegen,
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = _build_parser(argv)
        args = parser.parse_args(argv)
        if getattr(args, "digits", None) is not None and args.digits < 1:
            raise ParameterError(f"--digits = {args.digits}: must be >= 1")
        return _HANDLERS[args.command](args)
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except ParameterError as exc:
        print(f"qderive: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # pragma: no cover - output piped into `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
