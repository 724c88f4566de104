"""The sources the derivations cite, as BibTeX: ``qderive derive NAME --latex FILE --bib REFS.bib``.

A derivation cites with the prose markup ``[@key, locator]`` (:mod:`.prose`); :func:`bibtex` writes the
entries of the keys one derivation cites, :func:`thebibliography` typesets them for a standalone document,
:func:`short` gives "Sopin 2013" for the Markdown page and the terminal. The entries hold what a paper's
reference list needs, nothing about this repository.
"""

from __future__ import annotations

import re

__all__ = ["ENTRIES", "bibtex", "short", "thebibliography", "check_keys"]

#: key -> (entry type, ((field, value), ...)); values are BibTeX (braces protect capitals)
ENTRIES: dict[str, tuple[str, tuple]] = {
    "sopin2013": ("phdthesis", (
        ("author", "Sopin, Eduard S."),
        ("title", "Models of finite-capacity systems with batch arrivals and their application to the analysis of "
                  "{SIP} server performance"),
        ("school", "Peoples' Friendship University of Russia"),
        ("address", "Moscow"),
        ("type", "Cand. Sc. (Phys.-Math.) thesis abstract"),
        ("year", "2013"),
        ("note", "In Russian"),
    )),
    "sipoverload2flow": ("misc", (
        ("author", "{Peoples' Friendship University of Russia}"),
        ("title", "Models of {SIP} server operation under overload: two threshold algorithms"),
        ("howpublished", "Conference paper, Peoples' Friendship University of Russia"),
        ("note", "In Russian"),
    )),
    "pechinkin_sip": ("misc", (
        ("author", "Pechinkin, Alexander V."),
        ("title", "Simulation of overload control in {SIP} server networks"),
        ("howpublished", "Conference paper"),
    )),
    "wang_liao_scp": ("article", (
        ("author", "Wang, Yulong and Liao, Jianxin"),
        ("title", "The study on the mobile intelligent network {SCP} overload control in multi-service "
                  "environment"),
        ("journal", "Sciencepaper Online"),
        ("note", "In Chinese"),
    )),
    "bogatyrev2017": ("article", (
        ("author", "Bogatyrev, V. A. and Bogatyrev, S. V."),
        ("title", "Redundant servicing of delay-critical requests in two-level systems"),
        ("journal", "Journal of Instrument Engineering"),
        ("volume", "60"), ("number", "10"), ("pages", "945--950"), ("year", "2017"),
        ("doi", "10.17586/0021-3454-2017-60-10-945-950"),
    )),
    "fuhrmann_cooper1985": ("article", (
        ("author", "Fuhrmann, S. W. and Cooper, Robert B."),
        ("title", "Stochastic decompositions in the {M/G/1} queue with generalized vacations"),
        ("journal", "Operations Research"), ("volume", "33"), ("number", "5"), ("pages", "1117--1129"),
        ("year", "1985"),
    )),
    "chaudhry_templeton1983": ("book", (
        ("author", "Chaudhry, M. L. and Templeton, J. G. C."),
        ("title", "A First Course in Bulk Queues"),
        ("publisher", "Wiley"), ("address", "New York"), ("year", "1983"),
    )),
    "yadin1963": ("article", (
        ("author", "Yadin, M. and Naor, P."),
        ("title", "Queueing systems with a removable service station"),
        ("journal", "Operational Research Quarterly"), ("volume", "14"), ("number", "4"), ("pages", "393--405"),
        ("year", "1963"),
    )),
    "takagi1991": ("book", (
        ("author", "Takagi, Hideaki"),
        ("title", "Queueing Analysis, Volume 1: Vacation and Priority Systems"),
        ("publisher", "North-Holland"), ("address", "Amsterdam"), ("year", "1991"),
    )),
    "gth1985": ("article", (
        ("author", "Grassmann, Winfried K. and Taksar, Michael I. and Heyman, Daniel P."),
        ("title", "Regenerative analysis and steady state distributions for {Markov} chains"),
        ("journal", "Operations Research"), ("volume", "33"), ("number", "5"), ("pages", "1107--1116"),
        ("year", "1985"),
    )),
    "jain1984": ("techreport", (
        ("author", "Jain, Raj and Chiu, Dah-Ming and Hawe, William R."),
        ("title", "A quantitative measure of fairness and discrimination for resource allocation in shared computer "
                  "systems"),
        ("institution", "Digital Equipment Corporation"), ("number", "DEC-TR-301"), ("year", "1984"),
    )),
    "rfc3261": ("misc", (
        ("author", "Rosenberg, J. and Schulzrinne, H. and Camarillo, G. and Johnston, A. and Peterson, J. and "
                   "Sparks, R. and Handley, M. and Schooler, E."),
        ("title", "{SIP}: Session Initiation Protocol"),
        ("howpublished", "RFC 3261, IETF"), ("year", "2002"),
    )),
}


def _field(key: str, name: str) -> str:
    return dict(ENTRIES[key][1]).get(name, "")


def check_keys(keys) -> None:
    """Refuse a key that is not in :data:`ENTRIES`, naming it."""
    missing = [k for k in keys if k not in ENTRIES]
    if missing:
        raise KeyError(f"cited but not in the bibliography: {', '.join(missing)}")


def _plain(value: str) -> str:
    return re.sub(r"[{}]", "", value)


def short(key: str) -> str:
    """Author-year text of a key: "Sopin 2013", "Wang and Liao", "Grassmann et al. 1985"."""
    check_keys([key])
    names = [_plain(a).split(",")[0].strip() for a in _field(key, "author").split(" and ") if a.strip()]
    who = names[0] if len(names) == 1 else (" and ".join(names) if len(names) == 2 else f"{names[0]} et al.")
    year = _field(key, "year")
    return f"{who} {year}".strip()


def bibtex(keys) -> str:
    """The BibTeX entries of ``keys`` (``--bib FILE``)."""
    check_keys(keys)
    out = []
    for key in keys:
        kind, fields = ENTRIES[key]
        width = max(len(f) for f, _ in fields)
        body = ",\n".join(f"  {f.ljust(width)} = {{{v}}}" for f, v in fields)
        out.append(f"@{kind}{{{key},\n{body}\n}}\n")
    return "\n".join(out)


def thebibliography(keys) -> str:
    """A ``thebibliography`` list of ``keys`` for a standalone document (no BibTeX run needed)."""
    check_keys(keys)
    if not keys:
        return ""
    items = []
    for key in keys:
        f = dict(ENTRIES[key][1])
        authors = f.get("author", "").replace(" and ", ", ")
        parts = [authors, f"\\emph{{{f['title']}}}"]
        parts += [f[x] for x in ("journal", "school", "institution", "publisher", "howpublished") if x in f]
        if "volume" in f:
            parts.append(f"vol.~{f['volume']}" + (f", no.~{f['number']}" if "number" in f else ""))
        if "pages" in f:
            parts.append(f"pp.~{f['pages']}")
        if "year" in f:
            parts.append(f["year"])
        items.append(f"\\bibitem{{{key}}} " + ", ".join(p for p in parts if p) + ".")
    return "\\begin{thebibliography}{9}\n" + "\n".join(items) + "\n\\end{thebibliography}"
