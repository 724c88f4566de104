"""Notebook friendliness: every model's derivation, model object and result record render in Jupyter
(``_repr_latex_`` / ``_repr_markdown_``) and as readable text in a terminal; so do the laws.

The models come from the registry (``qd.models()``), the laws from their own ``examples()``, so a new
model or law is covered without being listed here.
"""

import re
from html import unescape as html_unescape

import pytest

import qderive as qd
from qderive.derivations.capabilities import has as _has, load as _load

MODELS = sorted(qd.models().items())


def _laws():
    for name in sorted(qd.__all__):
        obj = getattr(qd, name)
        if isinstance(obj, type) and issubclass(obj, (qd.TimeLaw, qd.BatchLaw)) and "examples" in vars(obj):
            for example in obj.examples():
                yield pytest.param(example, id=f"{name}-{example.spec_text()}")


def _tag(label):
    m = re.fullmatch(r"\((.+)\)", label)
    return f"\\tag{{{m.group(1)}}}" if m else f"\\tag*{{{label}}}"


def test_every_model_has_a_derivation_and_an_example():
    assert len(MODELS) >= 9
    for name, cls in MODELS:
        assert _has(cls, "derivation") and cls.example is not None, name


@pytest.mark.parametrize("name, cls", MODELS, ids=[n for n, _ in MODELS])
def test_derivation_renders(name, cls):
    deriv = cls.example().derive()  # the facade's way: model.derive()
    assert deriv is not None and len(deriv.steps) >= 2, name
    # display math, one $$ block per step, tagged with the step's label (the source's number), in order
    latex = deriv._repr_latex_()
    blocks = re.findall(r"\$\$\n(.*?)\n\$\$", latex, re.S)
    assert len(blocks) == len(deriv.steps) and latex.startswith("$$") and latex.endswith("$$")
    for block, step in zip(blocks, deriv.steps):
        assert block.startswith("\\begin{aligned}") and block.endswith("\\end{aligned} " + _tag(step.label))
        if not deriv.notation:  # a step shown alone does not know its derivation's abbreviations
            assert step._repr_latex_() == f"$$\n{block}\n$$"
        assert step.label in str(step)
    md = deriv._repr_markdown_()
    assert md.startswith(f"# {deriv.title}") and md.count("$$\n\\begin{aligned}") == len(deriv.steps)
    assert all(f"**{step.label}** {step.title}" in md for step in deriv.steps)
    text = str(deriv)
    assert text.startswith(deriv.title) and f"Source: {deriv.source}" in text


@pytest.mark.parametrize("name, cls", MODELS, ids=[n for n, _ in MODELS])
def test_model_and_result_record_render(name, cls):
    model = cls.example()
    latex = model._repr_latex_()
    escaped = "".join("\\" + c if c in "_&%#$" else c for c in cls.summary)
    assert latex.startswith(f"$\\text{{{escaped}}}") and latex.endswith("\\end{array}$")

    assert not re.search(r"(?<!\\)_", latex), "text mode needs escaped underscores (real LaTeX and KaTeX)"
    def esc(t):
        return "".join("\\" + c if c in "_&%#$" else c for c in str(t))

    for key, value in model.parameters().items():
        if value is not None:
            assert f"\\text{{{esc(key)}}} & \\text{{{esc(value)}}}" in latex, key
    assert str(model).startswith(f"{name}(")
    record = model.evaluate()
    md = record._repr_markdown_()
    lines = md.splitlines()
    assert lines[:2] == ["| measure | value | units |", "|---|---|---|"]
    rows = {m.group(1): m.group(2) for m in (re.match(r"\| `(\w+)` \| (.*?) \| .* \|$", line) for line in lines[2:])
            if m}
    # a row per measure computed, showing its value (lists as a count); a measure the model does not
    # compute (Erlang B's rates without a holding time) may only show None
    assert set(record.as_dict()) <= set(rows)
    assert all(rows[k] == "None" for k in set(rows) - set(record.as_dict()))
    for key, value in record.as_dict().items():
        shown = f"[{len(value)} values]" if isinstance(value, (list, tuple)) else f"{value}"
        assert rows[key] == shown, key
    for note in record.notes:
        assert f"*note:* {note}" in md
    # the same table in HTML (Jupyter prefers it): a row per measure, same values, escaped
    html = record._repr_html_()
    assert html.startswith("<table><thead><tr><th>measure</th><th>value</th><th>units</th></tr></thead>")
    cells = dict(re.findall(r"<tr><td><code>(\w+)</code></td><td>(.*?)</td>", html))
    assert {k: html_unescape(v) for k, v in cells.items()} == rows


def test_a_result_with_notes_shows_them():
    """A record with notes lists them under the table (vacation-finite in overload)."""
    q = qd.FiniteVacationQueue.from_load(5, qd.Geometric(5), qd.Erlang(4, 0.015), qd.Erlang(4, 0.075), 50)
    record = q.evaluate()
    assert record.notes and all(f"*note:* {n}" in record._repr_markdown_() for n in record.notes)


@pytest.mark.parametrize("law", list(_laws()))
def test_laws_render(law):
    latex = law._repr_latex_()
    assert latex.startswith("$") and latex.endswith("$")
    symbol = "\\beta" if isinstance(law, qd.TimeLaw) else "L{\\left(z \\right)}"
    assert symbol in latex
