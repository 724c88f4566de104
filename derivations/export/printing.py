"""How a derivation's relations are written: the source's notation, terms in a person's order,
long results broken over lines, readable names in a terminal.

Three steps, shared by the LaTeX and Markdown exports, Jupyter and the terminal:

* :func:`present` rewrites an expression into the source's notation without changing its value:
  the derivation's abbreviations (``Derivation.notation``: rho-bar = lambda l_1 b_1 and
  alpha-bar = lambda l_1 f_1 of chapter 2, section 0, where they apply) replace the products
  they stand for, and a factor written with more minus signs than plus signs is negated
  (``b_1 l_1 lambda - 1`` becomes ``-(1 - rho-bar)``, the sign moving to the front), so that
  ``present(e).subs(rho-bar, lambda l_1 b_1) - e`` simplifies to 0 (tested);
* the printers (:class:`PaperLatexPrinter`, :class:`UnicodePrinter`) order the terms of a sum
  as a person writes them: a positive constant first where something is subtracted from it
  (``1 - rho-bar``, ``1 + alpha-bar - rho-bar``), otherwise a positive term first
  (``l_2 - l_1``, ``j - i + 1``, ``j + 1``), and the factors of a product in the source's order
  (:func:`paper_factors`: numbers, rates, the moments l_k, b_k, f_k, the rest, sums, exponentials:
  ``\\lambda l_1 b_2``, never SymPy's ``b_2 l_1 \\lambda``);
* :func:`rows` breaks a relation into rows of at most ``width`` characters of its 2-D text
  form (a proxy for its typeset width): at the top-level ``+`` of a sum, inside the
  parenthesised sum of a product (``c (t_1 + ... \\\\ + t_n)``), a long numerator or
  denominator named separately (``N/D`` with ``N = ...``, ``D = ...``), one row per case
  of a Piecewise, one row per relation of a conjunction.
"""

from __future__ import annotations

import functools
import re
import unicodedata

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.pretty.pretty import PrettyPrinter
from sympy.printing.str import StrPrinter

__all__ = ["paper_name", "present", "restore", "paper_order", "paper_factors", "factor_rank", "PaperLatexPrinter",
           "UnicodePrinter", "latex", "pretty",
           "GREEK", "ACCENTS", "SUBSCRIPTS", "SUPERSCRIPTS", "script", "shift", "tex_group",
           "unicode_name", "tex_width", "text_width", "rows", "Row"]


# --------------------------------------------------------------------------------------
# Notation and signs (value-preserving rewrites)
# --------------------------------------------------------------------------------------


def _evaluated(definition):
    """A definition written unevaluated for display (``Mul(lambda, l_1, b_1, evaluate=False)``), evaluated."""
    return definition.func(*definition.args) if definition.args else definition


def _substitute(expr, notation):
    """Replace each definition of ``notation`` ((symbol, product) pairs) by its symbol where the product
    divides a term (SymPy's algebraic ``subs`` of a product), where that shortens the expression
    (fewer operations): the abbreviations are used wherever they simplify the result."""
    out = expr
    for symbol, definition in notation:
        value = _evaluated(definition)
        candidate = out.subs(value, symbol).subs(1 / value, 1 / symbol)
        if candidate != out and sp.count_ops(candidate) <= sp.count_ops(out):
            out = candidate
    return out


def _negative_heavy(add) -> bool:
    """True when a sum is written with more minus signs than plus signs (or as many, with a negative
    constant): ``rho - 1``, ``rho - alpha - 1``; its negation reads better (``1 - rho``)."""
    terms = sp.Add.make_args(add)
    if any(t.is_Number and t.is_positive for t in terms):
        return False  # 1 - P_J - P_T reads as it is: a positive constant leads
    neg = sum(1 for t in terms if t.could_extract_minus_sign())
    pos = len(terms) - neg
    if neg != pos:
        return neg > pos
    const = [t for t in terms if t.is_Number]
    return bool(const) and const[0].is_negative


def _tidy(expr):
    if expr.is_Atom or isinstance(expr, (sp.Indexed, sp.IndexedBase)):
        return expr
    args = tuple(_tidy(a) for a in expr.args)
    if args != expr.args:
        expr = expr.func(*args)
    if not expr.is_Mul:
        return expr
    sign, factors, changed = 1, [], False
    for f in expr.args:
        base, ex = f.as_base_exp()
        if base.is_Add and ex.is_Integer and _negative_heavy(base):
            base, changed = -base, True
            sign = -sign if int(ex) % 2 else sign
            f = sp.Pow(base, ex)
        factors.append(f)
    if not changed:
        # a product with a minus sign and one sum: the sign goes into the sum where that makes it read
        # better (-lambda_0 (P_J + P_T - 1) -> lambda_0 (1 - P_J - P_T))
        coeff, _ = expr.as_coeff_Mul()
        sums = [k for k, f in enumerate(factors) if f.is_Add]
        if not (coeff.is_negative and len(sums) == 1):
            return expr
        k = sums[0]
        terms = sp.Add.make_args(factors[k])
        neg = sum(1 for t in terms if t.could_extract_minus_sign())
        if neg == 0 or neg * 2 > len(terms) + 1:
            return expr
        flipped = sp.Add(*[-t for t in terms])
        rest = sp.Mul(*[f for j, f in enumerate(factors) if j != k]) * -1
        if rest == 1:
            return flipped
        return sp.Mul(rest, flipped, evaluate=False) if rest.is_Number else rest * flipped
    body = sp.Mul(*factors)
    if sign > 0:
        return body
    if body.is_Add:  # -1 times a lone sum: SymPy would distribute it again; keep the sum as it reads
        return sp.Mul(-1, body, evaluate=False)
    return -body


def _partial_fractions(expr, symbols):
    """A rational result with an abbreviation in its denominator split into partial fractions in it, each
    term factored, where that shortens it: W = f_2/(2 f_1) + (...)/(2 f_1 l_1 (1 - rho-bar)), as the thesis
    writes (6)."""
    for sym in symbols:
        if not isinstance(expr, sp.Expr) or isinstance(expr, sp.Piecewise) or not expr.has(sym) \
                or not expr.is_rational_function():
            continue
        if not sp.fraction(sp.together(expr))[1].has(sym):
            continue
        try:
            candidate = sp.Add(*[sp.factor(t) for t in sp.Add.make_args(sp.apart(expr, sym))])
        except (sp.PolynomialError, NotImplementedError):
            continue
        if sp.count_ops(candidate) < sp.count_ops(expr):
            expr = candidate
    return expr


def present(expr, notation=()):
    """``expr`` in the source's notation (``notation``: (symbol, definition) pairs), split into partial
    fractions in an abbreviation where that is shorter, with sums that read better negated written so;
    the value is unchanged (:func:`restore` undoes the notation)."""
    expr = _substitute(sp.sympify(expr, strict=True), notation)  # expressions only, never text
    return _tidy(_partial_fractions(expr, [symbol for symbol, _ in notation]))


def restore(expr, notation=()):
    """The notation's symbols replaced by their definitions (the inverse of :func:`present`)."""
    return expr.subs({symbol: _evaluated(definition) for symbol, definition in notation})


# --------------------------------------------------------------------------------------
# Term order
# --------------------------------------------------------------------------------------


def _negative(term) -> bool:
    return term.could_extract_minus_sign()


def _simplicity(term) -> tuple:
    """The typeset width of a term without its sign and numeric coefficient (``l_3 - 3 l_2 + 2 l_1`` are
    equally simple), then its degree (``N + N^2``, whose widths a subscript can make equal): the measure
    :func:`paper_order` sorts by."""
    body = term.as_coeff_Mul()[1]
    degree = sum(e for b, e in body.as_powers_dict().items() if not b.is_Number and e.is_Integer and e > 0)
    return text_width(body), int(degree)


def paper_order(add, index: bool = False) -> list:
    """The terms of a sum as a person writes them.

    A positive constant comes first (``1 - rho``, ``1 + alpha - rho``, ``1 + theta t``); the other terms go
    from the simplest to the most involved (by their typeset width: ``rho_1 + rho_2 - rho_1 rho_2 +
    rho_1 rho_2 theta t``, a polynomial in ascending powers ``lambda + nu - (lambda + nu (1 - p)) z``, the
    residual vacation ``f_2/(2 f_1)`` before the terms over ``1 - rho``), terms as wide as each other in
    SymPy's order (``rho_1 ...`` before ``rho_2 ...``, the moments b, f, l grouped); without a positive constant
    to lead, the first positive term is moved to the front (``l_2 - l_1``, ``j - i + 1``): a sum does not open
    with a minus sign.
    ``index=True`` (subscripts) and sums of integers (counts: ``j + 1``, ``n - k_0 + 1``, ``H - L + 1``) keep
    SymPy's order and the constant last, unless every other term is subtracted (``1 - L``).
    """
    terms = list(add.as_ordered_terms())
    # a count (every term an integer: n - k_0 + 1, H - L + 1); not 1 - B(n), whose B(n) is no integer
    index = index or all(t.is_integer for t in terms)
    const = [t for t in terms if t.is_Number]
    rest = [t for t in terms if not t.is_Number]
    if not index:
        rest.sort(key=_simplicity)  # stable: SymPy's order among terms as wide as each other
        if const and const[0].is_positive:
            return const + rest  # 1 - rho, 1 - p + lambda/mu, 1 + theta t: the constant leads, the rest by simplicity
    for i, t in enumerate(rest):
        if not _negative(t):
            rest = [t] + rest[:i] + rest[i + 1:]
            break
    if const and const[0].is_positive and rest and all(_negative(t) for t in rest):
        return const + rest  # 1 - L, never -L + 1
    if const and not index and const[0].is_positive:
        return const + rest  # 1 - rho, 1 + alpha - rho, 1 + theta t (a count keeps it last: j + 1)
    return rest + const


# --------------------------------------------------------------------------------------
# Factor order
# --------------------------------------------------------------------------------------

_RATE_NAME = re.compile(r"^\\?(?:lambda|Lambda)(?![A-Za-z])")
#: the moments of the source's notation in the order it writes them: batch l_k (and its factorial moments l_[k]),
#: service b_k, vacation f_k
_MOMENT_RANK = {"l": 3, "b": 4, "f": 5}
_MOMENT_NAME = re.compile(r"^([lbf])(?:_?(\d+)|_\{(\d+|[a-z]|\[\d+\])\}|_([a-z]))$")


@functools.cache
def _greek_name():
    """A name that is a Greek letter's, with or without a subscript (``lambda_0``, ``\\rho``, not ``ell``)."""
    letters = sorted((k for k in GREEK if k != "ell"), key=len, reverse=True)
    return re.compile(r"^\\?(?:" + "|".join(letters) + r")(?![A-Za-z])")


def _factor_name(base) -> str | None:
    """The name a factor is ordered by: a symbol's name without its accent (``\\bar{\\rho}`` -> ``\\rho``),
    an Indexed's base label; None for anything else."""
    if isinstance(base, sp.Indexed):
        base = base.base.label
    if not isinstance(base, sp.Symbol):
        return None
    return re.sub(r"^\\(?:" + "|".join(ACCENTS) + r")\{(.*)\}$", r"\1", base.name)


def factor_rank(factor) -> int:
    """Where a factor of a product stands in the source's writing (chapter 2, (6), (7): ``lambda l_1 b_2``,
    ``lambda l_1 W``): numbers 0; the arrival rates lambda, Lambda (symbols, or functions so named: ``lambda(c, 0)``)
    1; the other Greek letters (rates and loads: mu, rho-bar, alpha-bar) 2; the batch moments l_k 3, the service
    moments b_k 4, the vacation moments f_k 5; any other symbol, indexed quantity or function (``B(c)``,
    ``\\delta_{j k}``) 6; sums 7 (``\\lambda_c (1 - B(c))``); exponentials and logarithms 8 (``(n - k_0 + 1)
    \\log\\rho``, ``\\rho_1 (1 - \\rho_2) e^{-\\theta_1 t}``); a sum sign or integral last 9 (``(1 - p)
    \\sum_k F(\\tau_k)``). A power ranks as its base (``l_1^2``)."""
    if factor.is_Number:
        return 0
    base = factor.as_base_exp()[0]
    if isinstance(base, (sp.Sum, sp.Product, sp.Integral)):
        return 9
    if base.is_Add:
        return 7
    if isinstance(base, sp.core.function.AppliedUndef):
        return 1 if _RATE_NAME.match(base.func.__name__) else 6
    if base is sp.E or isinstance(base, sp.log):
        return 8
    name = _factor_name(base)
    if name is None:
        return 6
    if _RATE_NAME.match(name):
        return 1
    if _greek_name().match(name):
        return 2
    moment = _MOMENT_NAME.match(name)
    return _MOMENT_RANK[moment.group(1)] if moment else 6


def paper_factors(mul) -> list:
    """The factors of a product in the source's order: by :func:`factor_rank` (``lambda l_1 b_2``, never SymPy's
    ``b_2 l_1 lambda``), factors of one rank in SymPy's order (``b_1^2 b_2``, ``l_1 l_2``); non-commutative
    factors keep their place after the commutative ones."""
    commutative, rest = mul.args_cnc()
    ordered = sorted(sp.Mul(*commutative).as_ordered_factors() if commutative else [], key=factor_rank)
    return ordered + rest


class _PaperOrder:
    """Mixin: sums printed in :func:`paper_order` (indices of an Indexed with ``index=True``)."""

    _in_index = 0

    def _as_ordered_terms(self, expr, order=None):
        if isinstance(expr, sp.Add):
            return paper_order(expr, index=self._in_index > 0)
        return super()._as_ordered_terms(expr, order=order)

    def _index(self, i):
        self._in_index += 1
        try:
            return self._print(i)
        finally:
            self._in_index -= 1


class _PaperFactors:
    """Mixin: products printed with their factors in :func:`paper_factors` (unless the printer's ``order`` is
    ``"none"`` or ``"old"``: factors as given)."""

    #: the printer writes a product's minus sign itself (SymPy's LaTeX printer would negate the product)
    _sign_outside = False
    #: set while a product is printed in order (``order`` is then "none" for SymPy's printer, not the caller's)
    _reordering = False

    def _print_Mul(self, expr, *args, **kwargs):
        """SymPy's product printing on the factors in :func:`paper_factors`' order: the product is rebuilt with its
        arguments in that order and printed with ``order="none"`` (SymPy's printers then take the arguments as
        stored, and SymPy's fraction split, ``fraction(exact=True)``, keeps them). With ``order`` ``"none"`` or
        ``"old"`` (the notation's definitions), or an unevaluated product (a number after the first factor:
        ``Mul(2, 3, evaluate=False)``), the product is printed as given."""
        printer = super()._print_Mul
        as_given = self._settings.get("order") in ("none", "old") and not self._reordering
        if not isinstance(expr, sp.Mul) or as_given or expr.args[0] is sp.S.One \
                or any(a.is_Number for a in expr.args[1:]):
            return printer(expr, *args, **kwargs)
        ordered = paper_factors(expr)
        if self._sign_outside and ordered[0].is_Number and ordered[0].is_negative:
            # SymPy's LaTeX printer negates a product with a minus sign, which sorts its arguments again: the sign
            # is written here and the positive product printed in order (a lone negated sum as SymPy writes it)
            positive = ([-ordered[0]] if ordered[0] != -1 else []) + ordered[1:]
            if len(positive) == 1 and positive[0].is_Add:
                return printer(expr, *args, **kwargs)
            return "- " + self._print(positive[0] if len(positive) == 1 else sp.Mul._from_args(positive))
        previous = self._settings.get("order"), self._reordering
        self._settings["order"], self._reordering = "none", True  # the products inside are ordered too
        try:
            return printer(sp.Mul._from_args(ordered), *args, **kwargs)
        finally:
            self._settings["order"], self._reordering = previous


class PaperLatexPrinter(_PaperFactors, _PaperOrder, LatexPrinter):
    """SymPy's LaTeX printer with sums in :func:`paper_order`, products in :func:`paper_factors` (sums last:
    ``\\lambda_c (1 - B(c))``); Indexed as ``q_{j+1}``."""

    _sign_outside = True

    def _print_Function(self, expr, exp=None):
        """An undefined function applied as the paper writes it: ``B(n)``, ``\\operatorname{Var}(x)`` (SymPy
        writes ``B{\\left(n \\right)}``); defined functions (``\\log``, ``\\exp``) as SymPy does."""
        if not isinstance(expr, sp.core.function.AppliedUndef):
            return super()._print_Function(expr, exp)
        name = self._print(sp.Symbol(expr.func.__name__))
        if name == expr.func.__name__ and len(name) > 1 and re.fullmatch(r"[A-Za-z]+", name):
            name = rf"\operatorname{{{expr.func.__name__}}}"
        args = ", ".join(self._print(a) for a in expr.args)
        tall = any(isinstance(a, (sp.Pow, sp.Mul)) and "frac" in self._print(a) for a in expr.args)
        out = rf"{name}\left({args}\right)" if tall else f"{name}({args})"
        return f"{out}^{{{exp}}}" if exp is not None else out

    def _print_expm1(self, expr, exp=None):
        """``expm1(x)`` is an implementation's name: the paper writes ``e^{x} - 1``."""
        out = rf"\left(e^{{{self._print(expr.args[0])}}} - 1\right)"
        return f"{out}^{{{exp}}}" if exp is not None else out

    def _print_log1p(self, expr, exp=None):
        out = rf"\log\left(1 + {self._print(expr.args[0])}\right)"
        return f"{out}^{{{exp}}}" if exp is not None else out

    def _print_Piecewise(self, expr):
        """Cases with fractions at display size (``\\dfrac``: amsmath), not the script size of ``cases``."""
        return super()._print_Piecewise(expr).replace("\\frac{", "\\dfrac{")

    def _print_Symbol(self, expr, style="plain"):
        return paper_name(super()._print_Symbol(expr, style=style))

    def _print_Indexed(self, expr):
        """Indices attached to the base: ``q^{r}_{j}``, ``a^{(1)}_{0}``, ``q_{L,1}`` (never ``{q^r}_j``)."""
        base = self._print(expr.base)
        idx = ",".join(self._index(i) for i in expr.indices)
        merged = re.fullmatch(r"(.*)_\{([^{}]*)\}", base)
        if merged and "_" not in merged.group(1).replace("\\_", ""):
            return f"{merged.group(1)}_{{{merged.group(2)},{idx}}}"
        if "_" in re.sub(r"\{[^{}]*\}", "", base):
            return "{" + base + "}_{" + idx + "}"
        return base + "_{" + idx + "}"


_WORD_SCRIPT = re.compile(r"([_^])\{([A-Za-z]{3,}(?:[ -][A-Za-z]+)*)\}")


def paper_name(tex: str) -> str:
    """A symbol's LaTeX in the paper's conventions: a word in a sub- or superscript upright
    (``W_{\\text{single}}``), the expectation upright (``\\mathrm{E}[W^{2}]``, ``\\mathrm{E}\\tau_{0}``)."""
    tex = _WORD_SCRIPT.sub(lambda m: f"{m.group(1)}{{\\text{{{m.group(2)}}}}}", tex)
    tex = re.sub(r"^E(?=\\[A-Za-z]|\[)", r"\\mathrm{E}", tex)
    return tex


class _OrderedStr(_PaperOrder, StrPrinter):
    pass


# --------------------------------------------------------------------------------------
# Unicode names
# --------------------------------------------------------------------------------------

GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "ϕ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
    "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω", "ell": "ℓ",
}
ACCENTS = {"tilde": "\u0303", "bar": "\u0304", "hat": "\u0302", "dot": "\u0307", "overline": "\u0305"}
SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
SUPERSCRIPTS = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW",
                "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ"))


def script(letter: str, kind: str) -> str:
    try:
        return unicodedata.lookup(f"MATHEMATICAL {kind} {'CAPITAL' if letter.isupper() else 'SMALL'} {letter}")
    except KeyError:
        try:
            return unicodedata.lookup(f"SCRIPT {'CAPITAL' if letter.isupper() else 'SMALL'} {letter}")
        except KeyError:
            return letter


def _bold(ch: str) -> str:
    if ch.isdigit():
        return unicodedata.lookup(f"MATHEMATICAL BOLD DIGIT {unicodedata.name(ch).split()[-1]}")
    return script(ch, "BOLD") if ch.isalpha() else ch


def shift(text: str, table: dict, mark: str) -> str:
    """``text`` in sub/superscript characters, or ``_text`` / ``^text`` (parenthesised if longer than one
    character) where a character has no such form."""
    plain = text.replace(" ", "")
    if all(c in table for c in plain):
        return "".join(table[c] for c in plain)
    return mark + (plain if len(plain) == 1 else f"({plain})")


def unicode_name(name: str) -> str:
    """A symbol name as a terminal shows it: ``\\tilde{q}_{j+1}`` -> q̃ⱼ₊₁, ``\\bar{c}`` -> c̄,
    ``varphi`` -> φ, ``lambda_0`` -> λ₀, ``b1`` -> b₁, ``muprime_1`` -> μ′₁, ``q^{r}`` -> qʳ,
    ``\\mathcal{S}_0`` -> 𝒮₀, ``\\operatorname{Var}`` -> Var."""
    s = name.replace("prime", "′")
    s = re.sub(r"\\?\b(" + "|".join(sorted(GREEK, key=len, reverse=True)) + r")(?![a-zA-Z])",
               lambda m: GREEK[m.group(1)], s)
    s = re.sub(r"\\(operatorname|mathrm|text|mathit)\{([^{}]*)\}", r"\2", s)
    s = re.sub(r"\\mathcal\{([A-Za-z])\}", lambda m: script(m.group(1), "SCRIPT"), s)
    s = re.sub(r"\\mathbf\{([^{}]*)\}", lambda m: "".join(_bold(c) for c in m.group(1)), s)
    s = re.sub(r"\\(" + "|".join(ACCENTS) + r")\{([^{}]*)\}", lambda m: m.group(2) + ACCENTS[m.group(1)], s)
    s = re.sub(r"(?<=[A-Za-zα-ωΑ-Ω])(\d+)$", r"_\1", s)  # b1 -> b_1 (SymPy's convention)
    s = re.sub(r"_\{([^{}]*)\}|_([A-Za-z0-9]+)", lambda m: shift(m.group(1) or m.group(2), SUBSCRIPTS, "_"), s)
    s = re.sub(r"\^\{([^{}]*)\}|\^([A-Za-z0-9]+)", lambda m: shift(m.group(1) or m.group(2), SUPERSCRIPTS, "^"), s)
    return s.replace("\\", "")


class UnicodePrinter(_PaperFactors, _PaperOrder, PrettyPrinter):
    """SymPy's 2-D unicode printer with readable names (:func:`unicode_name`), sums in :func:`paper_order` and
    products in :func:`paper_factors`; ``q[j + 1]`` is shown as ``qⱼ₊₁``."""

    def __init__(self, settings=None):
        super().__init__({"use_unicode": True, "wrap_line": False, **(settings or {})})

    def _print_Symbol(self, e, bold_name=False):
        from sympy.printing.pretty.stringpict import prettyForm

        return prettyForm(unicode_name(e.name))

    def _print_IndexedBase(self, e):
        return self._print_Symbol(e.label)

    def _print_Indexed(self, e):
        from sympy.printing.pretty.stringpict import prettyForm

        printer = _OrderedStr()
        printer._in_index = 1
        idx = ",".join(printer.doprint(i).replace(" ", "") for i in e.indices)
        return prettyForm(unicode_name(e.base.label.name) + shift(idx, SUBSCRIPTS, "_"))


@functools.lru_cache(maxsize=4096)
def latex(expr) -> str:
    """LaTeX of ``expr`` with :class:`PaperLatexPrinter`."""
    return PaperLatexPrinter().doprint(expr)


def pretty(expr, order=None, columns: int | None = None) -> str:
    """The 2-D unicode text of ``expr`` with :class:`UnicodePrinter` (``order="none"``: factors as given),
    wrapped at ``columns`` (default: the terminal's width)."""
    import shutil

    columns = columns or shutil.get_terminal_size((100, 24)).columns
    return UnicodePrinter({"order": order, "wrap_line": True, "num_columns": columns}).doprint(expr)


_ZERO = {"left", "right", "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr", "mathopen", "mathclose", "displaystyle",
         "limits", "nonumber", "notag", "allowbreak"}
_SPACE = {",": 0.33, ":": 0.45, ";": 0.55, " ": 0.5, "!": 0.0, "quad": 2.0, "qquad": 4.0}
_BINARY = {"cdot", "times", "le", "ge", "ne", "leq", "geq", "wedge", "vee", "to", "in", "approx", "equiv"}
_WORDS = {"min", "max", "exp", "log", "ln", "sin", "cos", "det", "lim", "inf", "sup"}


def tex_group(s: str, i: int):
    """The brace group starting at ``s[i]`` (or the single token there): (content, index after it)."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] != "{":
        m = re.match(r"\\[A-Za-z]+|\\.|.", s[i:])
        return m.group(0), i + len(m.group(0))
    depth, j = 0, i
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        depth += {"{": 1, "}": -1}.get(s[j], 0)
        if depth == 0:
            return s[i + 1:j], j + 1
        j += 1
    return s[i + 1:], len(s)


def tex_width(s: str) -> float:
    """An estimate of the typeset width of LaTeX math ``s``, in units of about half an em (a letter): a
    fraction is as wide as its wider part, a sub- and superscript stack at 0.7 size, a binary operator
    with its spaces takes 2.2, an unbreakable ``cases`` block its widest row."""
    total, i, after_big = 0.0, 0, False
    while i < len(s):
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            name = m.group(1)
            i += len(m.group(0))
            big = False
            if name in ("frac", "dfrac", "tfrac"):
                a, i = tex_group(s, i)
                b, i = tex_group(s, i)
                total += max(tex_width(a), tex_width(b)) + 0.4
            elif name in _ZERO:
                if i < len(s) and s[i] == ".":
                    i += 1
            elif name in ("text", "textrm", "mathrm", "operatorname", "mathit", "mathbf", "textit"):
                g, i = tex_group(s, i)
                total += 0.9 * len(g) if name.startswith("text") else tex_width(g) + (0.3 * len(g))
            elif name in ("tilde", "bar", "hat", "mathcal", "overline", "dot", "boldsymbol", "mathbb"):
                g, i = tex_group(s, i)
                total += tex_width(g)
            elif name in ("begin", "end"):
                env, i = tex_group(s, i)
                if name == "begin":
                    end = s.find("\\end{" + env + "}", i)
                    inner = s[i:end if end >= 0 else len(s)]
                    i = (end + len(env) + 6) if end >= 0 else len(s)
                    cells = [sum(tex_width(x) for x in r.split("&")) + 2 for r in re.split(r"\\\\", inner)]
                    total += max(cells) + 2
            elif name in _SPACE:
                total += _SPACE[name]
            elif name in ("sum", "prod", "int"):
                total += 2.0
                big = True
            elif name in _BINARY:
                total += 2.2
            elif name in _WORDS:
                total += len(name)
            elif name in ("{", "}", "|"):
                total += 0.6
            else:
                total += 1.0
            after_big = big
            continue
        if c in "^_":
            scripts = []
            while i < len(s) and s[i] in "^_":
                g, i = tex_group(s, i + 1)
                scripts.append(tex_width(g))
            w = 0.7 * max(scripts)
            total += max(0.0, w - 2.0) if after_big else w
        elif c in "+-=<>":
            total += 2.2
        elif c in "{} ":
            pass
        elif c in "()[]|":
            total += 0.6
        elif c in ",;'":
            total += 0.5
        elif c == "&":
            pass
        else:
            total += 1.0
        after_big = False
        i += 1
    return total


@functools.lru_cache(maxsize=4096)
def text_width(expr) -> float:
    """The estimated typeset width of ``expr`` (:func:`tex_width` of its LaTeX): the measure :func:`rows`
    breaks by."""
    return tex_width(latex(expr))


# --------------------------------------------------------------------------------------
# Breaking a relation into rows
# --------------------------------------------------------------------------------------


class Row(tuple):
    """One row of a displayed relation: ``(left, op, right)`` LaTeX; ``left == op == ""`` continues
    the row above (printed indented under the relation sign)."""

    __slots__ = ()

    def __new__(cls, left, op, right):
        return super().__new__(cls, (left, op, right))


_OPS = {"==": "=", "<": "<", ">": ">", "<=": r"\le", ">=": r"\ge", "!=": r"\ne"}
_SIGN_WIDTH = 3


def _add_lines(expr, width):
    """Lines of a sum: terms packed greedily; a term wider than a line is broken itself. Every line but the
    first starts with its sign."""
    lines, current, used = [], "", 0
    for i, term in enumerate(paper_order(expr)):
        negative = _negative(term)
        body = -term if negative else term
        sign = "-" if negative else ("+" if i else "")
        w = text_width(body) + _SIGN_WIDTH
        if w > width:
            if current:
                lines.append(current)
            parts = _lines(body, width - _SIGN_WIDTH)
            lines += [f"{sign} {parts[0]}".strip()] + parts[1:]
            current, used = "", 0
            continue
        if current and used + w > width:
            lines.append(current)
            current, used = "", 0
        text = latex(body)
        if PaperLatexPrinter()._needs_add_brackets(body):
            text = rf"\left({text}\right)"
        current = f"{current} {sign} {text}".strip()
        used += w
    if current:
        lines.append(current)
    return lines


def _paren(lines, size):
    if len(lines) == 1:
        return [rf"\{size}l({lines[0]}\{size}r)"]
    return [rf"\{size}l({lines[0]}"] + lines[1:-1] + [rf"{lines[-1]}\{size}r)"]


def _lines(expr, width):
    """LaTeX lines of ``expr``, each at most ``width`` characters of its text form where a break exists."""
    if text_width(expr) <= width:
        return [latex(expr)]
    if expr.is_Add:
        return _add_lines(expr, width)
    if expr.is_Mul:
        coeff, _ = expr.as_coeff_Mul()
        sign = ""
        if coeff.is_negative:
            sign, expr = "- ", -expr
        num, den = sp.fraction(expr)
        sums = [f for f in sp.Mul.make_args(num) if f.is_Add]
        if sums and text_width(den) <= width // 2:
            big = max(sums, key=text_width)
            # the product's own factors without the sum: dividing by den again would write 3 (1 - rho) as 3 - 3 rho
            rest = sp.Mul(*[f for f in sp.Mul.make_args(expr) if f is not big]) if big in sp.Mul.make_args(expr) \
                else sp.Mul(*[f for f in sp.Mul.make_args(num) if f is not big]) / den
            prefix = "" if rest == 1 else latex(rest) + " "
            size = "bigg" if den != 1 or "frac" in latex(big) else "Big"
            inner = _paren(_lines(big, width - text_width(rest) - 2), size)
            inner[0] = sign + prefix + inner[0]
            return inner
        if den != 1:
            # long numerator and denominator: the numerator's lines over "\Big/" then the denominator's
            top = _paren(_lines(num, width - 2), "Big")
            bottom = _paren(_lines(den, width - 4), "Big")
            top[0] = sign + top[0]
            bottom[0] = r"\Big/ " + bottom[0]
            return top + bottom
    if isinstance(expr, sp.Pow) and expr.exp.is_Integer and expr.base.is_Add:
        lines = _paren(_lines(expr.base, width - 4), "Big")
        lines[-1] += "^{%d}" % int(expr.exp)
        return lines
    return [latex(expr)]


def _piecewise_rows(left, op, pw, room):
    out = []
    for value, cond in pw.args:
        when = r"\text{otherwise}" if cond is sp.true else r"\text{if } " + latex(cond)
        short = text_width(value) + tex_width(when) + 4 <= room
        lines = _lines(value, room)
        if short:
            lines[-1] += r",\qquad " + when
        out += [Row(left, op, lines[0])] + [Row("", "", x) for x in lines[1:]]
        if not short:
            out.append(Row("", "", r"\qquad " + when))
    return out


def _aux_symbols(expr, taken):
    """Fresh names chi_1, chi_2, ... not among ``taken``."""
    k = 0
    while True:
        k += 1
        sym = sp.Symbol(rf"\chi_{{{k}}}")
        if sym not in taken:
            yield sym


def _relation_rows(rel, width, notation):
    """Rows of a relation; ``notation=None``: the relation as written (a stated paper form), not rewritten."""
    show = (lambda e: e) if notation is None else (lambda e: present(e, notation))
    if isinstance(rel, sp.And):  # in the order of their left-hand sides: B(1) before B(2)
        parts = sorted(rel.args, key=lambda r: sp.default_sort_key(getattr(r, "lhs", r)))
        return [row for arg in parts for row in _relation_rows(arg, width, notation)]
    if not isinstance(rel, sp.core.relational.Relational):
        return [Row("", "", line) for line in _lines(show(rel), width)]
    lhs, rhs = show(rel.lhs), show(rel.rhs)
    left, op = latex(lhs), _OPS.get(rel.rel_op, rel.rel_op)
    room = width - text_width(lhs) - 3
    if isinstance(rhs, sp.Piecewise) and text_width(rhs) > room:
        return _piecewise_rows(left, op, rhs, room)
    aux = []
    if text_width(rhs) > room:
        # a case distinction inside a long result cannot be broken: it is named and defined below
        names = _aux_symbols(rhs, rel.free_symbols)
        for pw in sorted(rhs.atoms(sp.Piecewise), key=sp.default_sort_key):
            if pw in rhs.atoms(sp.Piecewise):
                sym = next(names)
                rhs = rhs.xreplace({pw: sym})
                aux.append((sym, pw))
    lines = _lines(rhs, room)
    out = [Row(left, op, lines[0])] + [Row("", "", x) for x in lines[1:]]
    for sym, pw in aux:
        defined = _relation_rows(sp.Eq(sym, pw, evaluate=False), width - 6, ())
        first = defined[0][0]
        out += [Row(r"\text{where } " + first, defined[0][1], defined[0][2])]
        out += [Row("", r[1], r[2]) if r[0] == first else r for r in defined[1:]]
    return out


@functools.lru_cache(maxsize=1024)
def rows(relation, width: int = 72, notation=()) -> list[Row]:
    """The rows of a displayed relation (``Eq``, an inequality, ``And`` of them, or an expression) in the
    source's notation (``None``: as written, no rewriting), broken so that each is at most ``width`` wide."""
    return _relation_rows(relation, width, notation)
