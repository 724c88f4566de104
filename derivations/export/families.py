"""Law families for generated code: a law class with its structure fixed and numeric parameters symbolic.

``--service erlang:k=4`` is the Erlang class with k = 4 and the mean left as the symbol
``service_mean``: the generated function takes ``service_mean`` as an argument, and the
count law the package uses (``Erlang(4, service_mean).count_law(lam)``) is printed by SymPy
into the kernel call. Structural fields (``Param.structural``) are given in the family;
a list-valued field takes its length from ``n=N`` (``hyperexp:n=2``, ``coxian:n=3``,
``ph:n=2``; a sub-generator has n x n entries); ``pmf:sizes=1/2/4`` fixes the sizes of a
finite batch law. The constraints of every argument come from the same field metadata
(``Param.check``) that validates the law in the package.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from ...symbolic.errors import ParameterError
from ...symbolic.params import Kind, params_of, split_spec

__all__ = ["Family", "family", "LAM", "moment"]


def _constraint(meta, role: str, text: str, key: str) -> str | None:
    """The rule of a law parameter as the bound text generated code checks (``"> 0"``); a rule that is not a bound
    (:class:`~qderive.symbolic.params.Rule`) is refused, naming the parameter: generated code would not check it."""
    if meta.check is None:
        return None
    if meta.check.text is None:
        raise ParameterError(f"--{role} {text}: {key} {meta.check.message}, a rule that generated code cannot check: "
                             "no generated code for this family")
    return meta.check.text

#: the batch arrival rate in generated code
LAM = sp.Symbol("lam", positive=True)


def moment(law, n: int):
    """``law.moment(n)``, computed once per process for a family's law: with symbolic parameters a moment is a
    derivative of the transform, simplified (0.05-0.3 s for a phase-type family), and a generated module prints
    the same moments several times (the mean in every measure's load factor, the count kernels' inputs). Laws
    are frozen values: equal laws have equal moments; a law that cannot be hashed is asked each time."""
    try:
        return _moment(law, n)
    except TypeError:  # an unhashable field (a dict of sizes): no memo
        return law.moment(n)


@functools.lru_cache(maxsize=256)
def _moment(law, n: int):
    return law.moment(n)


@dataclass(frozen=True)
class Family:
    """A law with symbolic parameters: ``law``; ``args`` (python name, description, check) in order;
    ``label`` words for the docstring."""

    law: object
    args: tuple
    label: str


def family(text: str, role: str, root, samples: bool = False) -> Family:
    """The :class:`Family` of ``--{role} text`` among the laws of ``root`` (TimeLaw or BatchLaw); ``samples``: the
    caller generates code for an empirical law with symbolic values (``empirical:n=N``, :func:`_sample_family`),
    else an empirical law is refused."""
    kind, values = split_spec(text, f"--{role}")
    registry = root.registered()
    if kind not in registry:
        raise ParameterError(f"--{role} {text}: unknown {root.family_name} {kind!r}; choose one of "
                             f"{', '.join(sorted(registry))}")
    cls = registry[kind]
    if cls.__name__ == "Empirical":
        if samples:
            return _sample_family(cls, text, role, values)
        raise ParameterError(f"--{role} {text}: an empirical law is data, not a family with parameters: no "
                             "generated code for this measure (evaluate it with qderive eval)")
    structural = {f.name for f, m in params_of(cls) if m.structural}
    structural_keys = {m.key or f.name for f, m in params_of(cls) if m.structural}
    try:
        n = int(values.pop("n")) if "n" in values and "n" not in structural_keys else None
    except ValueError:
        raise ParameterError(f"--{role} {text}: n must be an integer") from None
    kwargs, args = {}, []
    for f, meta in params_of(cls):
        key = meta.key or f.name
        if f.name in structural:
            if key not in values:
                raise ParameterError(f"--{role} {text}: {kind} needs {key}=N (fixed in the generated code)")
            kwargs[f.name] = int(values.pop(key))
            continue
        if cls.__name__ == "FinitePMF":
            break
        if not meta.cli and meta.kind is not Kind.NUMBERS:
            continue
        if meta.kind in (Kind.NUMBERS, Kind.INTEGERS):
            if n is None:
                raise ParameterError(f"--{role} {text}: give the number of phases, e.g. {kind}:n=2")
            count = n * n if f.name == "T" else (n - 1 if f.name == "probs" and cls.__name__ == "Coxian" else n)
            symbols = tuple(sp.Symbol(f"{role}_{key}{i + 1}", real=True) for i in range(count))
            kwargs[f.name] = symbols
            for i, s in enumerate(symbols):
                args.append((s, str(s), f"{role} {meta.help}, entry {i + 1}" + (f" [{meta.units}]" if meta.units
                                                                               else ""),
                         _constraint(meta, role, text, key)))
            continue
        if meta.kind is not Kind.NUMBER:
            continue
        s = sp.Symbol(f"{role}_{key}", positive=True)
        kwargs[f.name] = s
        args.append((s, str(s), f"{role} {meta.help}" + (f" [{meta.units}]" if meta.units else ""),
                     _constraint(meta, role, text, key)))
    if cls.__name__ == "FinitePMF":
        sizes = values.pop("sizes", None)
        if sizes is None:
            raise ParameterError(f"--{role} {text}: give the sizes, e.g. pmf:sizes=1/2/4")
        sizes = [int(v) for v in sizes.split("/")]
        probs = [sp.Symbol(f"{role}_p{s}", real=True) for s in sizes]
        law = cls({s: p for s, p in zip(sizes, probs)})
        args = [(p, str(p), f"probability of a batch of {s} customers (they must sum to 1)", "[0, 1]")
                for s, p in zip(sizes, probs)]
        return Family(law, tuple(args), f"batches of {'/'.join(map(str, sizes))} customers")
    if values:
        raise ParameterError(f"--{role} {text}: unknown {', '.join(values)} (a family fixes only its structure: "
                             f"{', '.join(sorted(structural)) or 'nothing'}, and n for lists)")
    try:
        law = cls(**kwargs)
    except TypeError as exc:
        raise ParameterError(f"--{role} {text}: {kind} has no generated code ({exc})") from None
    if hasattr(law, "count_law"):  # a time law: its count law must have a kernel to ship
        from ...numeric.sequences import count_kernel

        try:
            count_kernel(law.count_law(LAM))
        except ParameterError as err:
            raise err.within(f"--{role} {text}") from None
    label = text.strip()
    return Family(law, tuple(args), label)


def _sample_family(cls, text: str, role: str, values: dict) -> Family:
    """``empirical:n=N``: the empirical law of N sample values x_1..x_N (each with probability 1/N) that are the
    generated function's arguments ``{role}_value1..N`` (each > 0). A sample read from a file, or given by its
    values, is data, not a family: refused, naming the family form."""
    if "file" in values:
        raise ParameterError(f"--{role} {text}: a sample read from a file is data, not a family with parameters: no "
                             f"generated code for it (generate {cls.spec}:n=N, whose N values are the function's "
                             "arguments, or evaluate the file's law with qderive eval)")
    try:
        n = int(values.pop("n")) if set(values) == {"n"} else None
    except ValueError:
        n = None
    if n is None or n < 1:
        raise ParameterError(f"--{role} {text}: an empirical family fixes only the number of its values, e.g. "
                             f"{cls.spec}:n=3 (the values are the generated function's arguments {role}_value1..)")
    from ...symbolic import limits

    limits.check("sample_size", n, "points of an empirical law")
    symbols = tuple(sp.Symbol(f"{role}_value{i + 1}", positive=True) for i in range(n))
    law = _symbolic_sample(cls)(symbols)
    args = tuple((s, str(s), f"{role} sample value {i + 1} (each with probability 1/{n}) [time]", "> 0")
                 for i, s in enumerate(symbols))
    return Family(law, args, text.strip())


def _symbolic_sample(cls):
    """The empirical law class ``cls`` with symbolic sample values: no exact conversion or validation (the generated
    function checks each value), every value its own atom of weight 1/N (symbols are not ordered), and its
    specification text in the symbols' names (the command a generated function prints)."""

    class SymbolicSample(cls):
        def __post_init__(self):
            pass

        @property
        def _atoms(self):
            return tuple((x, sp.Rational(1, len(self.values))) for x in self.values)

        def spec_text(self):
            return f"{cls.spec}:values=" + "/".join(str(v) for v in self.values)

    return SymbolicSample
