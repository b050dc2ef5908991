"""A sweep's tables in HTML, numbers rounded to what their intervals support
(:mod:`._finding`): the ranking, the Pareto front and every metric for the report
(:mod:`._report`), and a notebook's view of a :class:`~ragframe.evaluate.SweepResult`
(its ``_repr_html_``: the finding in words above the ranking's first rows). Every
value is HTML-escaped; a result is read through :class:`._columns.Swept` only."""

from __future__ import annotations

import html

import polars as pl

from ragframe import schema as c
from ragframe.evaluate._columns import (
    P_HOLM,
    P_RANDOMIZATION,
    P_RANDOMIZATION_HOLM,
    P_T,
    PARETO,
    Swept,
)
from ragframe.evaluate._effects import stage_of
from ragframe.evaluate._finding import beats, decimals, finding, interval, number, p_value

NOTEBOOK_ROWS = 20
"""A notebook shows the ranking's first rows, this many (the summary holds them all)."""

NOTEBOOK_CSS = (
    ".ragframe-sweep .box{overflow:auto;max-height:32em}"
    ".ragframe-sweep td,.ragframe-sweep th{text-align:right;white-space:nowrap}"
    ".ragframe-sweep td.text,.ragframe-sweep th.text{text-align:left}"
    ".ragframe-sweep tr.best td{font-weight:600}.ragframe-sweep td.ci{opacity:.75}"
)
"""A notebook view's own style, scoped to it (the notebook's theme sets the rest)."""


def _cell(value: object, kind: str = "") -> str:
    shown = html.escape(str(value))
    return f'<td class="{kind}">{shown}</td>' if kind else f"<td>{shown}</td>"


def _table(
    head: list[str],
    rows: list[list[str]],
    groups: list[tuple[str, int]] | None = None,
    texts: tuple[str, ...] = (),
) -> str:
    """A ``<table>`` with a header row (and a stage row above it, when ``groups``);
    ``rows``: each a ``<tr>`` attribute, then its cells; ``texts``: left-aligned."""
    top = ""
    if groups:
        top = "<tr>" + "".join(f'<th colspan="{n}">{html.escape(g)}</th>' for g, n in groups)
        top += "</tr>"
    cells = "".join(
        f'<th class="text">{html.escape(h)}</th>' if h in texts else f"<th>{html.escape(h)}</th>"
        for h in head
    )
    body = "".join(f"<tr{r[0]}>{''.join(r[1:])}</tr>" for r in rows)
    return f"<table><thead>{top}<tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def ranking_table(result: Swept, limit: int | None = None) -> str:
    """The ranking, best first: rank, configuration, the metric with its interval, the
    difference from the baseline and its Holm-corrected p, the cost, the front, then the
    parameters grouped by stage; ``limit``: the first rows only."""
    summary, metric, cost = result.summary, result.metric, result.cost
    places, spent = decimals(summary, metric), decimals(summary, cost)
    base_rows = summary.filter(pl.col(c.CONFIG) == result.baseline)
    base = base_rows.row(0, named=True) if base_rows.height else None
    best = result.best().row(0, named=True)[c.CONFIG]
    params = sorted(result.parameters, key=lambda p: ("window", "retrieval", "context").index(
        stage_of(p)))  # fmt: skip
    head = ["#", "config", metric, "95% interval", "vs baseline", "p (Holm)", cost, "front"]
    rows = []
    for rank, row in enumerate(summary.head(limit or summary.height).iter_rows(named=True), 1):
        is_base = base is not None and row[c.CONFIG] == base[c.CONFIG]
        mark = ' class="best"' if row[c.CONFIG] == best else ' class="base"' if is_base else ""
        if is_base or base is None:
            versus, p = "baseline", ""
        else:
            delta = (row[metric] or 0.0) - (base[metric] or 0.0)
            versus = f"{delta:+,.{max(places, 0)}f}" + (" ✓" if beats(row, base, metric) else "")
            p = p_value(row[P_HOLM])
        cells = [mark, _cell(rank), _cell(row[c.CONFIG]), _cell(number(row[metric], places)),
                 _cell(interval(row, metric, places), "ci"), _cell(versus), _cell(p),
                 _cell(number(row[cost], spent)), _cell("●" if row[PARETO] else "")]  # fmt: skip
        cells += [_cell("none" if row[n] is None else row[n], "text") for n in params]
        rows.append(cells)
    groups = [("", len(head))]
    for p in params:
        if groups[-1][0] == stage_of(p):
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
        else:
            groups.append((stage_of(p), 1))
    return _table(head + params, rows, groups if params else None, tuple(params))


def metrics_table(result: Swept) -> str:
    """Every metric's mean and interval, and both tests raw and corrected."""
    summary = result.summary
    names = [n for n in summary.columns if n + "_low" in summary.columns]
    tests = [P_T, P_HOLM, P_RANDOMIZATION, P_RANDOMIZATION_HOLM]
    places = {n: decimals(summary, n) for n in names}
    rows = []
    for row in summary.iter_rows(named=True):
        cells = ["", _cell(row[c.CONFIG])]
        cells += [
            _cell(f"{number(row[n], places[n])} ({interval(row, n, places[n])})") for n in names
        ]
        cells += [_cell(p_value(row[t])) for t in tests]
        rows.append(cells)
    return _table(["config", *names, *tests], rows)


def front_table(result: Swept) -> str:
    front = result.pareto
    metric, cost = result.metric, result.cost
    places, spent = decimals(result.summary, metric), decimals(result.summary, cost)
    rows = [
        [
            "",
            _cell(row[c.CONFIG]),
            _cell(number(row[cost], spent)),
            _cell(number(row[metric], places)),
        ]
        + [_cell(row[p], "text") for p in result.parameters]
        for row in front.iter_rows(named=True)
    ]
    return _table(["config", cost, metric, *result.parameters], rows, texts=result.parameters)


def notebook_html(result: Swept, limit: int = NOTEBOOK_ROWS) -> str:
    """A notebook's view of ``result``: the finding in words, then the ranking's first
    ``limit`` rows (best first), and how many more the summary holds; a sweep without
    a judged configuration says so."""
    if not result.summary.height:
        return "<p>A sweep without configurations: no query was judged.</p>"
    said = "".join(f"<p>{html.escape(s)}</p>" for s in finding(result))
    rest = result.summary.height - limit
    more = (
        f"<p>{rest:,} more configurations: <code>.summary</code> holds them all.</p>"
        if rest > 0
        else ""
    )
    return (
        f"<div class='ragframe-sweep'><style>{NOTEBOOK_CSS}</style>{said}"
        f"<div class='box'>{ranking_table(result, limit)}</div>{more}</div>"
    )
