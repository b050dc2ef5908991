"""The HTML report of a sweep or an experiment, read by a person: the finding in words
first, then the ranking (key columns first, numbers rounded to what their intervals
support, in a box that scrolls on its own), the plots, the Pareto front and every
metric. One self-contained file (inline CSS, plots as PNG data URIs) that fits a
laptop screen, written atomically. The same ranking table is a notebook's view of a
:class:`SweepResult`.
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import Any

from ragframe import schema as c
from ragframe.evaluate._finding import finding
from ragframe.evaluate._metrics import check_metric
from ragframe.evaluate._result import SweepResult
from ragframe.evaluate._tables import front_table, metrics_table, ranking_table
from ragframe.io import write_atomically

DISTRIBUTION_CONFIGS = 12
"""The per-query plot shows the best configurations and the baseline, this many at most."""

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;
margin:0;background:#f6f7f9}
main{max-width:1240px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:1.45em;margin:0 0 4px}h2{font-size:1.15em;margin:28px 0 8px}
.meta{color:#5a6472;margin:0 0 14px}
.finding{background:#fff;border-left:5px solid #2f6fdf;padding:10px 18px;margin:0 0 8px;
box-shadow:0 1px 2px #0001}
.finding p{margin:6px 0}.finding p:first-child{font-weight:600}
.box{overflow:auto;width:fit-content;max-width:100%;max-height:70vh;background:#fff;
box-shadow:0 1px 2px #0001}
table{border-collapse:collapse;font-size:13.5px;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid #e3e6ea;white-space:nowrap;text-align:right}
th{position:sticky;top:0;background:#eef1f5;font-weight:600;z-index:1}
th[colspan]{text-align:center;border-bottom:2px solid #c9d0d9}
thead tr+tr th{top:27px}
td.text,th.text{text-align:left}td.ci{color:#5a6472}
tr.best td{background:#fff7df}tr.base td{background:#eef5ff}
.yes{color:#17803d;font-weight:600}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
.plots figure{margin:0;background:#fff;padding:8px;box-shadow:0 1px 2px #0001}
.plots figure.wide{grid-column:1/-1}.plots img{width:100%;height:auto;display:block}
figcaption{color:#5a6472;font-size:13px;margin-top:4px}
"""


def _png(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=130)
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figures(result: SweepResult) -> list[tuple[Any, str, str]]:
    """The report's plots, their captions and their CSS class (wide: the whole row)."""
    from ragframe.evaluate import _plots

    shown: list[tuple[Any, str, str]] = []
    if len(result.parameters) > 1:
        caption = (
            "Each parameter's effect, largest spread first: the mean over the "
            "configurations at each value."
        )
        shown.append((_plots.plot_effects(result)[0], caption, "wide"))
    for budget in ("max_characters", "max_tokens"):
        if budget in result.parameters:
            caption = "Lines dodged sideways so that none hides another; bars: 95% intervals."
            shown.append((_plots.plot_budget(result, budget=budget)[0], caption, ""))
            break
    caption = "Front points numbered by configuration (table below)."
    shown.append((_plots.plot_pareto(result)[0], caption, ""))
    picked = result.summary[c.CONFIG].head(DISTRIBUTION_CONFIGS - 1).to_list()
    picked += [] if result.baseline in picked else [result.baseline]
    caption = f"Per query: the best {len(picked) - 1} configurations and the baseline."
    shown.append((_plots.plot_distribution(result, configs=picked)[0], caption, ""))
    return shown


def report_page(result: SweepResult, title: str = "ragframe sweep") -> str:
    """The report of ``result`` as one HTML page."""
    check_metric(result.metric, result.summary.columns, "write_report")
    said = "".join(f"<p>{html.escape(s)}</p>" for s in finding(result))
    figures = "".join(
        f'<figure class="{kind}"><img alt="plot" src="data:image/png;base64,{_png(f)}">'
        f"<figcaption>{html.escape(text)}</figcaption></figure>"
        for f, text, kind in _figures(result)
    )
    queries = int(result.summary["judged"].max() or 0) if result.summary.height else 0  # type: ignore[arg-type]
    meta = (
        f"{result.summary.height} configurations · {queries} judged queries · metric "
        f"{result.metric} · cost {result.cost} · baseline: configuration {result.baseline} · "
        f"varied: {', '.join(result.parameters) or 'nothing'}"
    )
    return (
        f"<!doctype html><html lang='en'><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{html.escape(title)}: {html.escape(result.metric)}</title><style>{CSS}</style>"
        f"<main><h1>{html.escape(title)}: {html.escape(result.metric)}</h1>"
        f"<p class='meta'>{html.escape(meta)}</p><section class='finding'>{said}</section>"
        f"<h2>Ranking</h2><div class='box'>{ranking_table(result)}</div>"
        f"<p class='meta'>✓: better than the baseline after Holm's correction (p &lt; 0.05); "
        f"●: on the Pareto front of {html.escape(result.metric)} against "
        f"{html.escape(result.cost)}.</p>"
        f"<h2>Plots</h2><div class='plots'>{figures}</div>"
        f"<h2>Pareto front (cheapest first)</h2><div class='box'>{front_table(result)}</div>"
        f"<h2>Every metric (mean and 95% interval) and the tests</h2>"
        f"<div class='box'>{metrics_table(result)}</div></main></html>"
    )


def write_report(
    result: SweepResult, path: str | os.PathLike[str], *, title: str = "ragframe sweep"
) -> None:
    """A self-contained HTML report of a sweep (or an experiment: ``title``), written
    atomically: the finding in words (the best configuration, its interval, how it
    compares with the baseline after Holm's correction, which stage's parameters move
    the metric most), the ranking, each parameter's effect, the metric against the
    budget that varies (characters, else tokens), the Pareto front, the per-query
    distributions, and every metric.

    Raises:
        ConfigError: ``result`` is not a :class:`SweepResult`.
        RagframeError: matplotlib is missing, or ``path`` cannot be written.
    """
    from ragframe.evaluate._plots import _checked

    _checked(result, None, "write_report")
    page = report_page(result, title)

    def write(tmp: str) -> None:
        Path(tmp).write_text(page, encoding="utf-8")

    write_atomically(path, write)
