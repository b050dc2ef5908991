"""ragframe in a notebook: a sweep shows as a rounded table (``_repr_html_``), the
evaluate summary as a table, plots inline and progress as a widget. A real Jupyter
kernel (ipykernel, on this interpreter) runs a notebook built here with nbformat,
executed by nbclient (test-only dependencies; skipped when absent); and the HTML
itself is checked for its rounding, rows and escaping."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ragframe import schema as c
from ragframe.evaluate import SweepResult
from ragframe.evaluate._sweep import sweep_result
from ragframe.evaluate._tables import NOTEBOOK_ROWS
from tests.test_report import constructed

DATA = Path(__file__).resolve().parents[1] / "data"
"""The bundled default data (README's first command)."""

CELLS = [
    "import polars as pl\nimport ragframe as rf\n"
    "data = {data!r}\n"
    "results = pl.read_parquet(data + '/results.parquet')\n"
    "chunks = pl.read_parquet(data + '/chunks.parquet')\n"
    "qrels = rf.read_qrels(data + '/qrels.parquet')",
    "grid = {{'top_k': [5, 10], 'max_characters': [1000, 2000]}}\n"
    "result = rf.sweep(results, grid, qrels, chunks=chunks, progress=True)\n"
    "result",
    "per_query = rf.evaluate(qrels, candidates=results, blocks=rf.postprocess(results, "
    "rf.PostprocessConfig(top_k=5), chunks=chunks), chunks=chunks)\n"
    "rf.summarize(per_query)",
    "figure, tidy = rf.plot_budget(result)",
]
"""The notebook: read the bundled data, sweep it (with a progress bar), show the
result, an evaluate summary, and a plot (no ``%matplotlib``: the kernel's default)."""


class _Cells(HTMLParser):
    """The text of every ``<td>`` and ``<th>``, row by row, and each ``<tr>``'s class."""

    def __init__(self) -> None:
        super().__init__()
        self.table: list[list[str]] = []
        self.rows: list[str] = []
        self._open = False

    @property
    def cells(self) -> list[str]:
        """Every cell, in order."""
        return [cell for row in self.table for cell in row]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("td", "th"):
            self.table[-1].append("")
            self._open = True
        elif tag == "tr":
            self.table.append([])
            self.rows.append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._open = False

    def handle_data(self, data: str) -> None:
        if self._open:
            self.table[-1][-1] += data


def _parsed(page: str) -> _Cells:
    found = _Cells()
    found.feed(page)
    return found


def test_a_sweep_shows_its_finding_and_a_rounded_ranking() -> None:
    result = constructed()
    page = result._repr_html_()
    assert page.count("<table>") == 1 and "Best context_recall" in page
    parsed = _parsed(page)
    head, body = parsed.table[1], parsed.table[2:]  # a stage row, then the names
    column = {name: [row[head.index(name)] for row in body] for name in head}
    # rounded to the intervals (half-widths ~0.016: two decimals; characters ~25:
    # tens), never 0.2714... or 2794.7022
    assert all(re.fullmatch(r"0\.\d\d", s) for s in column[c.CONTEXT_RECALL])
    assert all(re.fullmatch(r"0\.\d\d.0\.\d\d", s) for s in column["95% interval"])
    assert all(re.fullmatch(r"(\d,)?\d\d0", s) for s in column[c.CHARS_USED]), column
    assert "2794.7022" not in page and "2,794.7022" not in page
    # every configuration, best first, the best's row marked; stages group parameters
    assert column["#"] == [str(i) for i in range(1, 13)]
    assert column["config"] == [str(k) for k in result.summary[c.CONFIG]]
    assert column["config"][0] == str(result.best()[c.CONFIG][0])
    assert parsed.rows[2] == "best" and parsed.rows.count("best") == 1
    assert [s for s in parsed.table[0] if s] == ["window", "retrieval", "context"]
    assert "more configurations" not in page


def test_a_large_sweep_shows_its_first_rows_and_says_how_many_more() -> None:
    rows = [
        {c.CONFIG: k, "top_k": k, c.QUERY_ID: str(q), c.JUDGED: True,
         c.CONTEXT_RECALL: (k * 7 + q) % 10 / 10, c.CHARS_USED: 100.0 * k + q}
        for k in range(30) for q in range(8)
    ]  # fmt: skip
    result = sweep_result(
        pl.DataFrame(rows), ("top_k",), 0, metrics=[c.CONTEXT_RECALL, c.CHARS_USED]
    )
    page = result._repr_html_()
    marks = _parsed(page).rows
    assert len(marks) - 2 == NOTEBOOK_ROWS  # two header rows
    assert f"{30 - NOTEBOOK_ROWS} more configurations" in page


def test_ids_and_values_are_escaped() -> None:
    """A parameter value or a metric name with markup shows as text, never as HTML."""
    base = constructed()
    odd = "<b>&amp;</b>"
    summary = base.summary.with_columns(pl.lit(odd).alias("method"))
    result = SweepResult(
        base.per_query, summary, base.parameters, base.metric, base.cost, base.baseline
    )
    page = result._repr_html_()
    assert odd not in page and "&lt;b&gt;&amp;amp;&lt;/b&gt;" in page
    assert odd in _parsed(page).cells


def test_a_sweep_without_configurations_says_so() -> None:
    """An empty summary shows a sentence (a notebook would show a formatter's traceback
    were the view to fail)."""
    base = constructed()
    empty = SweepResult(
        base.per_query.clear(), base.summary.clear(), base.parameters, base.metric,
        base.cost, base.baseline,
    )  # fmt: skip
    assert "no query was judged" in empty._repr_html_()


def _kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec for this interpreter in a folder of the test's own (a python3
    kernel installed elsewhere could run another Python), and a Jupyter and IPython
    that read and write only below ``tmp_path``."""
    spec = tmp_path / "jupyter" / "kernels" / "ragframe-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "ragframe test", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    for name, folder in (("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own default: inline
    monkeypatch.delenv("RAGFRAME_PYTHON_ROWS", raising=False)  # as a user's kernel runs
    return "ragframe-test"


def _executed(
    cells: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[list[dict[str, Any]]]:
    """The outputs of each of ``cells`` (``{data}``: the bundled data's folder) run in
    order by a real kernel, none of which may fail; skipped without the kernel's
    packages."""
    for needed in ("ipykernel", "ipywidgets", "matplotlib"):  # the kernel's, not imported
        if importlib.util.find_spec(needed) is None:  # here (no IPython in this process)
            pytest.skip(f"{needed} is not installed (pip install -e '.[test]')")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    name = _kernel(tmp_path, monkeypatch)
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(s.format(data=str(DATA))) for s in cells]
    nbclient.NotebookClient(book, timeout=120, kernel_name=name, allow_errors=True).execute()
    outputs: list[list[dict[str, Any]]] = [cell.outputs for cell in book.cells]
    errors = [o for cell in outputs for o in cell if o["output_type"] == "error"]
    assert not errors, [f"{e['ename']}: {e['evalue']}" for e in errors]
    return outputs


def _streams(outputs: list[dict[str, Any]]) -> str:
    """What a cell wrote to its standard output and error."""
    return "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")


def test_a_real_kernel_shows_the_tables_a_plot_and_a_progress_widget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = _executed(CELLS, tmp_path, monkeypatch)

    def shown(cell: int, kind: str) -> list[str]:
        return [str(o["data"][kind]) for o in outputs[cell] if kind in o.get("data", {})]

    swept = shown(1, "text/html")
    assert any("Best context_recall" in s and "<table>" in s for s in swept)
    widgets = shown(1, "application/vnd.jupyter.widget-view+json")
    assert widgets, "the sweep's progress is a notebook widget"
    assert "sweep" not in _streams(outputs[1])  # no text bar besides the widget
    summary = shown(2, "text/html")
    assert any("<table" in s and "context_recall" in s for s in summary)
    assert shown(3, "image/png"), "the plot renders inline"


def test_a_kernel_without_ipywidgets_shows_progress_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``progress=None`` in a kernel where ``ipywidgets`` cannot be imported: a text
    bar in the cell's output (a kernel's streams are no terminal, yet someone watches
    them), not silence and not a widget."""
    hidden = "import sys\nsys.modules['ipywidgets'] = None  # as if it were not installed\n"
    cells = [hidden + CELLS[0], CELLS[1].replace("progress=True", "progress=None")]
    outputs = _executed(cells, tmp_path, monkeypatch)
    kinds = {kind for o in outputs[1] for kind in o.get("data", {})}
    assert "application/vnd.jupyter.widget-view+json" not in kinds
    assert "sweep: 100%" in _streams(outputs[1])
    assert "text/html" in kinds  # the table still shows
