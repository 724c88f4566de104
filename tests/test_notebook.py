"""Notebook friendliness: every model's derivation, model object and result record render in Jupyter
(derivations: ``_repr_latex_`` / ``_repr_markdown_``; models: a table of their parameters with units) and as
readable text in a terminal; so do the laws.

The models come from the registry (``qd.models()``), the laws from their own ``examples()``, so a new
model or law is covered without being listed here.
"""

import re
from html import unescape as html_unescape

import pytest
from qderive.derivations.export.markdown import step_markdown
from qderive.derivations.export.prose import markdown_text, unicode_text

import qderive as qd
from qderive.symbolic.params import params_of
from qderive.derivations.capabilities import has as _has

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
        assert step._repr_latex_() == f"$$\n{block}\n$$"  # a step alone renders as in the export
        assert step.label in str(step)
    md = deriv._repr_markdown_()
    assert md.startswith(f"# {markdown_text(deriv.title)}") and md.count("$$\n\\begin{aligned}") == len(deriv.steps)
    assert all(step_markdown(step) in md for step in deriv.steps)
    text = str(deriv)
    assert text.startswith(unicode_text(deriv.title)) and f"Source: {unicode_text(deriv.source)}" in text


@pytest.mark.parametrize("name, cls", MODELS, ids=[n for n, _ in MODELS])
def test_model_and_result_record_render(name, cls):
    model = cls.example()
    # a table of the parameters (name, value as written on input, units, meaning), read back from the
    # Param metadata of the class (not from the repr's own helper): Markdown and HTML hold the same rows
    expected = {f.name: (str(model.parameters()[f.name]), meta.units, meta.help)
                for f, meta in params_of(cls) if model.parameters()[f.name] is not None}
    md = model._repr_markdown_().splitlines()
    assert md[0] == f"**{name}**: {cls.summary.replace('|', chr(92) + '|')}"
    assert md[2:4] == ["| parameter | value | units | meaning |", "|---|---|---|---|"]
    got = {m.group(1): tuple(c.replace("\\|", "|") for c in m.groups()[1:])
           for m in (re.match(r"\| `(\w+)` \| (.*?) \| (.*?) \| (.*) \|$", line) for line in md[4:]) if m}
    assert got == expected and len(md) == 4 + len(expected)
    html = model._repr_html_()
    cells = re.findall(r"<tr><td><code>(\w+)</code></td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", html)
    assert {k: tuple(html_unescape(c) for c in rest) for k, *rest in cells} == expected
    assert "\\text{" not in html + model._repr_markdown_(), "no unbreakable LaTeX line"
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
