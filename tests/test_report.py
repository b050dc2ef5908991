"""The HTML report, read by a person: the finding in words (checked on constructed
sweeps whose best configuration and Holm outcome are known), numbers rounded to what
the intervals support, a ranking table of a few key columns first, every plot inline,
labels that overlap nothing, lines that hide no other, the file written atomically."""

from __future__ import annotations

import base64
import itertools
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from ragframe import schema as c
from ragframe.evaluate import SweepResult, write_report
from ragframe.evaluate._finding import DASH, decimals, finding, number, p_value
from ragframe.evaluate._sweep import sweep_result

pytest.importorskip("matplotlib")

GRID = {"size": [200, 400, 800], "method": ["bm25", "dense"], "max_characters": [1000, 2000]}
"""An experiment's grid: a window, a retrieval and a context parameter (12 configurations)."""


def constructed(
    window: float = 0.3, retrieval: float = 0.02, context: float = 0.01, noise: float = 0.05
) -> SweepResult:
    """A sweep over :data:`GRID` of 40 queries whose context_recall grows with each
    stage's effect: ``window`` from size 200 to 800, ``retrieval`` for dense,
    ``context`` for 2,000 characters; the best configuration is the last (11:
    size=800, method=dense, max_characters=2000), the baseline the first."""
    rng = np.random.default_rng(7)
    rows = []
    for config, (size, method, budget) in enumerate(itertools.product(*GRID.values())):
        recall = (
            0.2
            + window * (size - 200) / 600
            + retrieval * (method == "dense")
            + context * (budget == 2000)
            + rng.normal(0, noise, 40)
        )
        chars = budget * 0.8 + rng.normal(0, 150, 40) + 2794.7022 * (config == 5)
        for query in range(40):
            rows.append(
                {c.CONFIG: config, "size": size, "method": method, "max_characters": budget,
                 c.QUERY_ID: str(query), c.JUDGED: True, c.CONTEXT_RECALL: float(recall[query]),
                 c.CHARS_USED: float(chars[query])}
            )  # fmt: skip
    per_query = pl.DataFrame(rows)
    metrics = [c.CONTEXT_RECALL, c.CHARS_USED]
    return sweep_result(per_query, tuple(GRID), 0, metrics=metrics)


class _Page(HTMLParser):
    """What a reader meets, in order: text, tables (their header cells), images."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []
        self.tables: list[list[list[str]]] = []  # per table, its header rows' cells
        self.images: list[str] = []
        self.text: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in.append(tag)
        if tag == "table":
            self.tables.append([])
            self.order.append("table")
        elif tag == "tr" and "thead" in self._in:
            self.tables[-1].append([])
        elif tag == "th":
            self.tables[-1][-1].append("")
        elif tag == "img":
            self.images.append(dict(attrs)["src"] or "")
            self.order.append("img")
        elif tag == "section" and ("class", "finding") in attrs:
            self.order.append("finding")

    def handle_endtag(self, tag: str) -> None:
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in and self._in[-1] == "th":
            self.tables[-1][-1][-1] += data


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_the_finding_names_the_best_its_interval_and_that_it_beats_the_baseline() -> None:
    result = constructed()
    best = result.summary.row(0, named=True)
    assert best[c.CONFIG] == 11 and best[c.P_HOLM if hasattr(c, "P_HOLM") else "p_holm"] < 0.05
    said = finding(result)
    places = decimals(result.summary, c.CONTEXT_RECALL)
    assert places == 2  # half-widths about 0.016: two decimals
    low, high = (number(best[f"context_recall_{s}"], 2) for s in ("low", "high"))
    assert said[0] == (
        "Best context_recall (higher is better): configuration 11 (size=800, method=dense, "
        f"max_characters=2000) with {number(best['context_recall'], 2)} (95% interval "
        f"{low}{DASH}{high}, 40 judged queries)."
    )
    assert "significantly better after Holm's correction" in said[1]
    assert "11 of 11 configurations beat the baseline" in said[1]
    assert said[2].startswith("The window stage moves context_recall most: varying size")
    assert "largest spread per stage: window 0.3" in said[2]


def test_the_finding_says_when_nothing_beats_the_baseline() -> None:
    """Effects far inside the noise: the best is not significantly better, no
    configuration beats the baseline."""
    result = constructed(window=0.01, retrieval=0.0, context=0.0, noise=0.3)
    said = finding(result)
    assert "not significantly different at 0.05 after Holm's correction" in said[1]
    assert "0 of 11 configurations beat the baseline" in said[1]


def test_numbers_are_rounded_to_what_their_intervals_support() -> None:
    frame = pl.DataFrame({"m": [2794.7022], "m_low": [2644.0], "m_high": [2944.0]})
    assert decimals(frame, "m") == -2 and number(2794.7022, -2) == "2,800"
    frame = pl.DataFrame({"m": [0.27141], "m_low": [0.236], "m_high": [0.307]})
    assert decimals(frame, "m") == 2 and number(0.27141, 2) == "0.27"
    flat = pl.DataFrame({"m": [0.5], "m_low": [0.5], "m_high": [0.5]})
    assert decimals(flat, "m") == 3  # no interval: three significant digits
    assert p_value(0.00012) == "< 0.001" and p_value(0.04567) == "0.046" and p_value(None) == DASH


def test_the_report_leads_with_the_finding_and_keeps_its_tables_narrow(tmp_path: Path) -> None:
    """The old report's defects fail here: its 16-column table of 4-decimal numbers
    came first and it said nothing in words."""
    result = constructed()
    out = tmp_path / "report.html"
    write_report(result, out)
    page = _read(out)
    assert page.order[0] == "finding"
    text = " ".join(page.text)
    for sentence in finding(result):
        assert sentence in text
    ranking = page.tables[0]
    assert ranking[0][-1] == "context" and ranking[1][:3] == ["#", "config", "context_recall"]
    assert len(ranking[1]) <= 8 + len(result.parameters)
    assert ranking[1][-3:] == ["size", "method", "max_characters"]  # stage order
    shown = re.sub(r"base64,[A-Za-z0-9+/=]+", "", out.read_text(encoding="utf-8"))
    assert not re.search(r"\d\.\d{4,}", shown), "a number with more decimals than supported"
    assert "2794.7" not in shown
    assert ".box{overflow:auto" in shown and "max-width:1240px" in shown


def test_every_plot_is_inline(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_report(constructed(), out)
    images = _read(out).images
    assert len(images) == 4  # effects, budget, Pareto front, per-query distribution
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "http" not in out.read_text(encoding="utf-8").replace("http-equiv", "")


def test_point_labels_overlap_nothing() -> None:
    """Front points on the same spot share a label, close ones get labels that do not
    overlap (the old report wrote each number on top of its neighbours)."""
    import matplotlib.pyplot as plt

    from ragframe.evaluate import plot_pareto

    figure, tidy = plot_pareto(constructed())
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    axes = figure.axes[0]
    labels = [t for t in axes.texts if t.get_text()]
    assert labels, "the front is labelled"
    boxes = [t.get_window_extent(renderer) for t in labels]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    inside = axes.get_window_extent(renderer)
    assert all(inside.contains(b.x0, b.y0) and inside.contains(b.x1, b.y1) for b in boxes)
    named = {int(n) for t in labels for n in t.get_text().split(", ")}
    assert named <= set(tidy.filter(pl.col("pareto"))[c.CONFIG].to_list())
    plt.close(figure)


def test_lines_on_the_same_values_stay_visible() -> None:
    """Two settings with the same means: their lines differ in marker (and colour) and
    are dodged sideways, so neither hides the other."""
    import matplotlib.pyplot as plt

    from ragframe.evaluate import plot_budget

    result = constructed(retrieval=0.0, noise=0.0)
    figure, _ = plot_budget(result)
    lines = [bars.lines[0] for bars in figure.axes[0].containers]  # each line, not its caps
    assert len(lines) == 6
    styles = {(ln.get_marker(), ln.get_color(), ln.get_linestyle()) for ln in lines}
    assert len(styles) == len(lines)
    xs = {tuple(ln.get_xdata()) for ln in lines}
    assert len(xs) == len(lines)
    plt.close(figure)


def test_the_report_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way leaves the previous report whole and no temporary."""
    out = tmp_path / "report.html"
    out.write_text("previous", encoding="utf-8")
    real = Path.write_text

    def broken(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        real(self, data[:100], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", broken)
    with pytest.raises(KeyboardInterrupt):
        write_report(constructed(), out)
    monkeypatch.undo()
    assert out.read_text(encoding="utf-8") == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    write_report(constructed(), out)
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
