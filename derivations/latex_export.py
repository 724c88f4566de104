"""LaTeX export: a derivation's steps (``sympy.latex``) plus its numeric recursions (latexify-py).

:func:`derivation_document` assembles a standalone ``.tex`` file that compiles
with pdflatex (packages: amsmath, breqn, algorithm, algpseudocode). The numeric
recursions are the small reference functions below, written in plain Python so
that latexify-py can render them as algorithms; they state, in code, exactly what
the vectorised engines of ``qderive.numeric`` compute.
"""

from __future__ import annotations

__all__ = ["derivation_document", "RECURSIONS", "render_recursions"]


def cut_recursion(a, abar, cbar, n):
    """(2b): q~_0 = 1, a_0 q~_{j+1} = cbar_j + sum_{i=1}^{j} q~_i abar_{j-i+1}."""
    q = [1]
    for j in range(n):
        s = cbar[j]
        for i in range(1, j + 1):
            s = s + q[i] * abar[j - i + 1]
        q.append(s / a[0])
    return q


def arrival_counts(beta, l_k, n):
    """a_n = sum_{k=0}^{n} beta_k l^{(k)}_n (customers arriving during one service)."""
    s = 0
    for k in range(n + 1):
        s = s + beta[k] * l_k[k][n]
    return s


def time_stationary(q, u, v, C, j):
    """(4): p_j = (q_0 v_j + sum_{i=1}^{j+1} q_i u_{j-i+1}) / C."""
    s = q[0] * v[j]
    for i in range(1, j + 2):
        s = s + q[i] * u[j - i + 1]
    return s / C


#: recursions rendered in every exported document, with the source's equation
RECURSIONS = (
    ("Arrival counts, spec/chapter2.md section 0", arrival_counts),
    ("Cut recursion (2b), no subtractions", cut_recursion),
    ("Embedded to time-stationary law (4)", time_stationary),
)


def render_recursions() -> str:
    """LaTeX (algorithmic environments) of :data:`RECURSIONS`, rendered by latexify-py."""
    import latexify

    parts = ["\\section*{Numeric recursions}"]
    for title, fn in RECURSIONS:
        body = latexify.get_latex(fn, style=latexify.Style.ALGORITHMIC)
        parts += [f"\\paragraph{{{title}}}", body, ""]
    return "\n".join(parts)


def derivation_document(derivation) -> str:
    """A standalone LaTeX document: every step of ``derivation`` and the numeric recursions."""
    return derivation.latex(extra_body=render_recursions())
