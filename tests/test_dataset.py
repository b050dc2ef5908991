"""Dataset runs: a stage run partition by partition over files, globs, directories and
frames -- however the input is ordered -- writes exactly what one big call writes, to a
file, a directory of parts or standard output; errors leave nothing behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe import io
from ragframe import schema as c
from ragframe.dataset import chunk_dataset, fetch_dataset, postprocess_dataset
from ragframe.driver._behind import Behind
from ragframe.errors import ConfigError, DataError, SchemaError
from ragframe.postprocess import missing_text_counts
from tests.conftest import require_cranfield

CONFIG = ragframe.PostprocessConfig(top_k=8, max_blocks=4, max_characters=3000)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cranfield() -> dict[str, pl.DataFrame]:
    root = require_cranfield("results_minilm.parquet", "chunks.parquet", "docs.parquet")
    names = ("results_minilm", "chunks", "docs", "queries")
    return {name: pl.read_parquet(root / f"{name}.parquet") for name in names}


@pytest.fixture(scope="module")
def whole(cranfield: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The one big call every partitioned run must equal."""
    results, chunks = cranfield["results_minilm"], cranfield["chunks"]
    return ragframe.postprocess(results, CONFIG, chunks=chunks).collect()


def _interleaved(frame: pl.DataFrame) -> pl.DataFrame:
    """Each query's rows spread over the whole table, their relative order kept."""
    rank = pl.int_range(pl.len()).over(c.QUERY_ID)
    return frame.with_columns(rank.alias("r")).sort("r", maintain_order=True).drop("r")


def _write(frame: pl.DataFrame, path: Path, row_group: int = 500) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        frame.write_parquet(path, row_group_size=row_group)
    else:
        io.write_table(frame, path)
    return path


# --- postprocess ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "spilled"),
    [("sorted", False), ("interleaved", True), ("csv", True), ("frame", False)],
)
@pytest.mark.parametrize("rows", [1_000, 4_000, 100_000])
def test_postprocess_partitions_equal_one_call(
    tmp_path: Path,
    cranfield: dict[str, pl.DataFrame],
    whole: pl.DataFrame,
    layout: str,
    spilled: bool,
    rows: int,
) -> None:
    results = cranfield["results_minilm"]
    chunks = _write(cranfield["chunks"], tmp_path / "chunks.parquet")
    source: object
    if layout == "frame":
        source = _interleaved(results)
    elif layout == "csv":
        source = _write(_interleaved(results), tmp_path / "r.csv")
    else:
        given = results if layout == "sorted" else _interleaved(results)
        source = _write(given, tmp_path / "r.parquet")
    out = tmp_path / "out" / "blocks.parquet"
    run = postprocess_dataset(source, out, CONFIG, chunks=chunks, rows_per_partition=rows)
    assert_frame_equal(pl.read_parquet(out), whole)
    parts = -(-results.height // rows)
    assert run.partitions == parts
    assert run.spilled == (spilled and parts > 1)
    assert run.counts["queries"] == results[c.QUERY_ID].n_unique()
    assert run.counts["candidates"] == results.height
    assert run.counts["blocks"] == whole.height
    assert run.counts["characters"] == whole[c.CHAR_COUNT].sum()
    assert sorted(p.name for p in out.parent.iterdir()) == ["blocks.parquet"]
    assert not [p for p in tmp_path.iterdir() if io.TEMP_MARK in p.name]  # no spill left


def test_postprocess_inline_text_hive_dataset_in_parts_out(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame]
) -> None:
    """Text in the candidates, a hive-partitioned dataset in (its key a passthrough
    column), a directory of parts out, in output order."""
    results = cranfield["results_minilm"].join(
        cranfield["chunks"].select(c.DOC_ID, c.CHUNK_INDEX, c.TEXT),
        on=[c.DOC_ID, c.CHUNK_INDEX],
        maintain_order="left",
    )
    dataset = tmp_path / "in"
    for (group,), part in results.group_by(pl.col(c.QUERY_ID) % 3, maintain_order=True):
        _write(part, dataset / f"grp={group}" / "data.parquet")
    (dataset / "_SUCCESS").write_text("")
    (dataset / "grp=0" / ".data.parquet.crc").write_text("x")
    want = ragframe.postprocess(io.scan_table(dataset), CONFIG).collect()
    assert "grp" in want.columns and want[c.QUERY_ID].n_unique() == 225
    out = tmp_path / "blocks"
    run = postprocess_dataset(dataset, f"{out}/", CONFIG, rows_per_partition=3_000)
    assert run.partitions == 4
    parts = sorted(p.name for p in out.iterdir())
    assert parts == [f"part-{k:05d}.parquet" for k in range(4)]
    assert_frame_equal(pl.read_parquet(out), want)
    first = pl.read_parquet(out / parts[1])[c.QUERY_ID]
    assert first.min() > pl.read_parquet(out / parts[0])[c.QUERY_ID].max()  # parts in order


def test_postprocess_empty_input_writes_the_schema(tmp_path: Path) -> None:
    empty = pl.DataFrame(
        schema={
            "query_id": pl.Int64,
            "entity_id": pl.Int64,
            "chunk_index": pl.Int64,
            "text": pl.String,
            "similarity": pl.Float64,
        }
    )
    for out in (tmp_path / "e.parquet", tmp_path / "e.csv", tmp_path / "parts"):
        target = f"{out}/" if out.suffix == "" else out
        run = postprocess_dataset(_write(empty, tmp_path / "in.parquet"), target)
        want = ragframe.postprocess(empty).collect()
        got = io.read_table(out)
        assert got.height == 0 and got.columns == want.columns, out
        assert run.counts == {  # every count, 0 (the CLI's summary reads them all)
            "queries": 0,
            "candidates": 0,
            "missing_text_candidates": 0,
            "missing_text_queries": 0,
            "blocks": 0,
            "characters": 0,
            "truncated": 0,
        }


@pytest.mark.parametrize("layout", ["sorted", "interleaved"])
def test_an_error_in_a_later_partition_leaves_nothing(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame], layout: str
) -> None:
    """A NaN score in the last query: the run fails there, after earlier partitions
    were written, and neither the output nor its temporaries nor the spill remain."""
    results = cranfield["results_minilm"]
    last = results[c.QUERY_ID].max()
    bad = results.with_columns(
        pl.when(pl.col(c.QUERY_ID) == last)
        .then(float("nan"))
        .otherwise(pl.col(c.SIMILARITY))
        .alias(c.SIMILARITY)
    )
    source = _write(bad if layout == "sorted" else _interleaved(bad), tmp_path / "in" / "r.parquet")
    chunks = _write(cranfield["chunks"], tmp_path / "in" / "chunks.parquet")
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.parquet").write_bytes(b"previous")
    for target in (out / "kept.parquet", f"{out / 'parts'}/"):
        with pytest.raises(DataError, match="NaN"):
            postprocess_dataset(source, target, CONFIG, chunks=chunks, rows_per_partition=1_000)
        assert sorted(p.name for p in out.iterdir()) == ["kept.parquet"]
        assert (out / "kept.parquet").read_bytes() == b"previous"


def test_missing_text_counts_the_whole_input(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame]
) -> None:
    """Text missing in several partitions: the error counts every one of them, as one
    big call does; with missing_text='empty' the run reports them."""
    results, chunks = cranfield["results_minilm"], cranfield["chunks"]
    store = chunks.filter(pl.col(c.DOC_ID) % 50 != 0)
    lacking = missing_text_counts(results, store).collect().row(0)
    assert lacking[1] > 10  # many queries, so many partitions
    source = _write(results, tmp_path / "r.parquet")
    with pytest.raises(DataError) as caught:
        ragframe.postprocess(results, CONFIG, chunks=store).collect()
    whole = f"{lacking[0]} candidate(s) in {lacking[1]} query(ies)"
    assert whole in str(caught.value)
    with pytest.raises(DataError, match=re.escape(f"; in the whole input: {whole}")):
        postprocess_dataset(
            source, tmp_path / "o.parquet", CONFIG, chunks=store, rows_per_partition=1_000
        )
    cfg = ragframe.PostprocessConfig(top_k=8, missing_text="empty")
    run = postprocess_dataset(
        source, tmp_path / "o.parquet", cfg, chunks=store, rows_per_partition=1_000
    )
    assert (run.counts["missing_text_candidates"], run.counts["missing_text_queries"]) == lacking
    want = ragframe.postprocess(results, cfg, chunks=store).collect()
    assert_frame_equal(pl.read_parquet(tmp_path / "o.parquet"), want)


def test_null_query_ids_are_reported_as_one_call_reports_them(tmp_path: Path) -> None:
    rows = pl.DataFrame(
        {
            "query_id": [None, 1, 2, 3],
            "entity_id": [1, 2, 3, 4],
            "chunk_index": [0] * 4,
            "text": ["a", "b", "c", "d"],
            "similarity": [0.5] * 4,
        }
    )
    with pytest.raises(DataError) as whole:
        ragframe.postprocess(rows).collect()
    with pytest.raises(DataError) as parted:
        postprocess_dataset(rows, tmp_path / "o.parquet", rows_per_partition=1)
    assert str(parted.value) == str(whole.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given", ["parquet", "frame"])
def test_an_input_that_fits_one_partition_is_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """Parquet metadata (or a frame's height) says every row fits one partition: no
    counting pass over the query ids, the same output as one call; an input larger
    than a partition is counted. Null query ids are reported as one call reports them
    either way."""
    from ragframe.driver import _ranges

    found: list[_ranges.Ranges] = []
    real = _ranges.query_ranges

    def spy(*args: object) -> _ranges.Ranges:
        found.append(real(*args))  # type: ignore[arg-type]
        return found[-1]

    monkeypatch.setattr(_ranges, "query_ranges", spy)
    rows = pl.DataFrame(
        {
            "query_id": [2, 2, 1, 3, 1],
            "entity_id": [1, 1, 2, 3, 2],
            "chunk_index": [0, 1, 0, 0, 1],
            "text": ["a b", "b c", "c", "d", "c e"],
            "similarity": [0.9, 0.8, 0.7, 0.6, 0.5],
        }
    )
    source = _write(rows, tmp_path / "r.parquet") if given == "parquet" else rows
    want = ragframe.postprocess(rows).collect()
    for per, counted in ((5, False), (1_000, False), (4, True)):
        out = tmp_path / f"o{per}.parquet"
        run = postprocess_dataset(source, out, rows_per_partition=per, progress=False)
        assert_frame_equal(pl.read_parquet(out), want)
        assert (found[-1].queries != [0]) == counted, (per, found[-1])
        assert run.partitions == (2 if counted else 1)
        assert run.counts["queries"] == 3
    query = pl.when(pl.col("query_id") != 3).then(pl.col("query_id"))  # 3 becomes null
    nulls = rows.with_columns(query.alias("query_id"))
    nulls_source = _write(nulls, tmp_path / "n.parquet") if given == "parquet" else nulls
    with pytest.raises(DataError) as one_call:
        ragframe.postprocess(nulls).collect()
    with pytest.raises(DataError) as run_error:
        postprocess_dataset(nulls_source, tmp_path / "n_out.parquet", progress=False)
    assert str(run_error.value) == str(one_call.value)
    assert found[-1].queries == [0]


def test_bad_columns_and_options_fail_before_any_work(tmp_path: Path) -> None:
    rows = pl.DataFrame({"query_id": [1], "entity_id": [1], "chunk_index": [0]})
    with pytest.raises(SchemaError, match="missing column 'similarity'"):
        postprocess_dataset(rows, tmp_path / "o.parquet")
    with pytest.raises(ConfigError, match="rows_per_partition must be an integer >= 1, got 0"):
        postprocess_dataset(rows, tmp_path / "o.parquet", rows_per_partition=0)
    assert list(tmp_path.iterdir()) == []


def test_progress_shows_partitions_only_when_asked_or_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cranfield: dict[str, pl.DataFrame]
) -> None:
    results = cranfield["results_minilm"].join(
        cranfield["chunks"].select(c.DOC_ID, c.CHUNK_INDEX, c.TEXT), on=[c.DOC_ID, c.CHUNK_INDEX]
    )
    postprocess_dataset(results, tmp_path / "a.parquet", rows_per_partition=4_000)
    assert capsys.readouterr().err == ""  # not a terminal: quiet
    postprocess_dataset(results, tmp_path / "b.parquet", rows_per_partition=4_000, progress=True)
    err = capsys.readouterr().err
    assert "postprocess: 100%" in err and "partition=3/3" in err
    assert "11.2k/11.2k" in err and "rows/s" in err  # rows done of all, the rate
    assert "queries=225" in err


# --- fetch -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def requests(cranfield: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Five documents per query, two of them not in the documents table."""
    queries = cranfield["queries"].select(c.QUERY_ID, pl.col("text").alias(c.QUERY))
    chosen = cranfield["results_minilm"].filter(pl.col(c.RANK) <= 5)
    absent = pl.DataFrame({c.QUERY_ID: [3, 1], c.DOC_ID: [99_999, 88_888], c.RANK: [9, 9]})
    chosen = pl.concat(
        [chosen.select(c.QUERY_ID, c.DOC_ID, c.RANK), absent], how="vertical_relaxed"
    )
    return chosen.join(queries, on=c.QUERY_ID, maintain_order="left").select(
        c.QUERY_ID, c.QUERY, c.DOC_ID, c.RANK
    )


@pytest.mark.parametrize(
    ("per", "out"),
    [
        (100_000, "content.parquet"),
        (100_000, "parts/"),
        (400_000, "content.jsonl"),
        (10**9, "content.parquet"),
    ],
    ids=["many", "many-parts", "few-jsonl", "one"],
)
def test_fetch_partitions_equal_one_call(
    tmp_path: Path,
    cranfield: dict[str, pl.DataFrame],
    requests: pl.DataFrame,
    per: int,
    out: str,
) -> None:
    docs = cranfield["docs"]
    sizes = docs.select(c.DOC_ID, pl.col(c.CONTENT).str.len_chars().alias(c.CONTENT_LENGTH))
    config = ragframe.FetchConfig(fulltext_threshold=600)
    want = ragframe.fetch(requests, docs, config, sizes=sizes).collect()
    doc_path = _write(docs, tmp_path / "docs.parquet")
    target = f"{tmp_path}/{out}"
    run = fetch_dataset(
        _write(requests, tmp_path / "requests.csv"),
        doc_path,
        target,
        config,
        sizes=sizes,
        text_per_partition=per,
    )
    got = io.read_table(target.rstrip("/"))
    assert_frame_equal(
        got, want if out != "content.jsonl" else io.read_table(_json(want, tmp_path))
    )
    text = docs[c.CONTENT].str.len_bytes().sum()
    parts = -(-text // per)  # the metadata's size also counts the offsets: a few bytes more
    assert parts <= run.partitions <= parts + 1
    assert run.counts["requests"] == run.counts["rows"] == requests.height
    assert run.counts[c.MISSING] == 2 and run.missing_ids == [88_888, 99_999]
    assert run.counts[c.HIGHLIGHTED] == (want[c.STRATEGY] == c.HIGHLIGHTED).sum() > 100
    assert sorted(p.name for p in tmp_path.iterdir() if io.TEMP_MARK in p.name) == []


def _json(frame: pl.DataFrame, folder: Path) -> Path:
    path = folder / "want.jsonl"
    frame.write_ndjson(path)
    return path


def test_fetch_reserves_the_request_order_column(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame], requests: pl.DataFrame
) -> None:
    clash = requests.with_columns(pl.lit(1).alias(c.REQUEST_ORDER))
    with pytest.raises(SchemaError, match="column 'request_order' is reserved"):
        fetch_dataset(clash, cranfield["docs"], tmp_path / "o.parquet")
    assert list(tmp_path.iterdir()) == []


# --- chunk -----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["one-row-group", "files", "csv", "frame"])
def test_chunk_batches_equal_one_call(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame], layout: str
) -> None:
    docs = cranfield["docs"].with_columns(
        pl.when(pl.col(c.DOC_ID) % 7 == 0)
        .then(pl.lit(""))
        .otherwise(pl.col(c.CONTENT))
        .alias(c.CONTENT)
    )
    config = ragframe.WindowConfig(window_chars=300, overlap_chars=50)
    want = ragframe.chunk(docs, config).collect()
    source: object = docs
    if layout == "one-row-group":
        source = _write(docs, tmp_path / "docs.parquet", row_group=10**6)
    elif layout == "files":
        for k, part in enumerate(docs.iter_slices(500)):
            _write(part, tmp_path / "docs" / f"{k}.parquet", row_group=100)
        source = tmp_path / "docs"
    elif layout == "csv":
        source = _write(docs, tmp_path / "docs.csv")
    run = chunk_dataset(source, tmp_path / "chunks.parquet", config, text_per_partition=100_000)
    assert_frame_equal(pl.read_parquet(tmp_path / "chunks.parquet"), want)
    assert run.counts == {
        "documents": docs.height,
        "chunks": want.height,
        "characters": want[c.TEXT].str.len_chars().sum(),
    }
    assert run.partitions >= docs[c.CONTENT].str.len_bytes().sum() // 100_000


# --- the commands ------------------------------------------------------------------------


def _command(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "ragframe.cli", *argv],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_the_command_pipes_stdin_to_stdout(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame]
) -> None:
    """``ragframe postprocess - --chunks CHUNKS -o - --format csv < results.parquet``: the
    blocks on standard output, the summary on standard error."""
    results = _write(cranfield["results_minilm"], tmp_path / "r.parquet")
    chunks = _write(cranfield["chunks"], tmp_path / "chunks.parquet")
    done = _command(
        "postprocess",
        "-",
        "--chunks",
        str(chunks),
        "-o",
        "-",
        "--format",
        "csv",
        "--top-k",
        "8",
        "--max-blocks",
        "4",
        "--max-characters",
        "3000",
        stdin=results.read_bytes(),
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "got.csv").write_bytes(done.stdout)
    want = ragframe.postprocess(cranfield["results_minilm"], CONFIG, chunks=cranfield["chunks"])
    joined = pl.col(c.CHUNK_INDEXES).cast(pl.List(pl.String)).list.join(",")
    assert (
        io.read_table(tmp_path / "got.csv").to_dicts()
        == want.collect().with_columns(joined).to_dicts()
    )
    err = done.stderr.decode()
    assert err.startswith("ragframe postprocess\n") and "partitions" in err and "%|" not in err


def test_the_commands_read_globs_and_write_parts(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame]
) -> None:
    docs = cranfield["docs"]
    for k, part in enumerate(docs.iter_slices(400)):
        _write(part, tmp_path / "docs" / f"d{k}.parquet")
    done = _command(
        "chunk",
        str(tmp_path / "docs" / "d*.parquet"),
        "-o",
        f"{tmp_path}/chunks/",
        "--window",
        "400",
        "--overlap",
        "100",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    want = ragframe.chunk(docs, ragframe.WindowConfig(window_chars=400, overlap_chars=100))
    assert_frame_equal(pl.read_parquet(tmp_path / "chunks"), want.collect())
    assert done.stderr == b""
    assert b"chunks " in done.stdout and b"partitions" in done.stdout


def test_a_signal_mid_run_removes_the_parts_and_the_spill(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame]
) -> None:
    """SIGTERM while a partition of a spilled run computes (the output directory's
    temporary and the spill exist): both are gone, one line, exit 143."""
    source = _write(_interleaved(cranfield["results_minilm"]), tmp_path / "in" / "r.csv")
    chunks = _write(cranfield["chunks"], tmp_path / "in" / "chunks.parquet")
    out = tmp_path / "out"
    out.mkdir()
    slow = textwrap.dedent(
        """
        import sys, time
        import polars as pl
        from ragframe.cli import main
        from ragframe import partition
        part = partition.postprocess_blocks
        def wait(s):
            print("computing", flush=True)
            time.sleep(60)
            return s
        def slow(rows, config, chunks=None):
            rows = rows.lazy().with_columns(pl.col("query_id").map_batches(wait)).collect()
            return part(rows, config, chunks=chunks)
        partition.postprocess_blocks = slow
        sys.exit(main())
        """
    )
    argv = [sys.executable, "-c", slow, "postprocess", str(source), "-o", f"{out}/parts/"]
    argv += ["--chunks", str(chunks), "--rows-per-partition", "1_000"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "computing"
        names = sorted(p.name for p in out.iterdir())
        assert len(names) == 2 and all(n.startswith(".parts" + io.TEMP_MARK) for n in names)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert err == "error: terminated\n"
    assert list(out.iterdir()) == []


def test_evaluate_reads_parts_and_writes_parts(
    tmp_path: Path, cranfield: dict[str, pl.DataFrame], whole: pl.DataFrame
) -> None:
    """postprocess output as a directory of parts chains into evaluate as it is."""
    root = require_cranfield("qrels.parquet")
    results = _write(cranfield["results_minilm"], tmp_path / "r.parquet")
    chunks = _write(cranfield["chunks"], tmp_path / "chunks.parquet")
    postprocess_dataset(
        results, f"{tmp_path}/blocks/", CONFIG, chunks=chunks, rows_per_partition=3_000
    )
    _write(whole, tmp_path / "blocks.parquet")
    argv = ["evaluate", "--qrels", str(root / "qrels.parquet"), "--candidates", str(results)]
    argv += ["--gain", "1:4,2:3,3:2,4:1", "--k", "5,10"]
    for given, out in (("blocks.parquet", "one.parquet"), ("blocks", "parts/")):
        done = _command(*argv[:1], str(tmp_path / given), *argv[1:], "-o", f"{tmp_path}/{out}")
        assert done.returncode == 0, done.stderr
    assert_frame_equal(
        pl.read_parquet(tmp_path / "parts"), pl.read_parquet(tmp_path / "one.parquet")
    )


@pytest.mark.parametrize("overlap", ["text", "offsets"])
def test_a_large_store_is_scanned_for_each_partitions_keys(
    tmp_path: Path,
    cranfield: dict[str, pl.DataFrame],
    monkeypatch: pytest.MonkeyPatch,
    overlap: str,
) -> None:
    """A store over the in-memory limit is semi-joined per partition: the same blocks,
    repeated keys still resolved by the first row."""
    from ragframe.dataset import _postprocess
    from ragframe.driver import _local

    monkeypatch.setattr(_postprocess, "STORE_IN_MEMORY", 0)
    results, chunks = cranfield["results_minilm"], cranfield["chunks"]
    repeated = chunks.head(300).with_columns(pl.lit("a repeat, never used").alias(c.TEXT))
    store = pl.concat([chunks, repeated])
    config = ragframe.PostprocessConfig(top_k=8, max_blocks=4, overlap=overlap)
    want = ragframe.postprocess(results, config, chunks=store).collect()
    seen: list[int] = []
    needed = _local.needed

    def counted(*args: object) -> pl.DataFrame:
        found = needed(*args)  # type: ignore[arg-type]
        seen.append(found.height)
        return found

    monkeypatch.setattr(_local, "needed", counted)
    path = _write(store, tmp_path / "chunks.parquet")
    out = tmp_path / "o.parquet"
    postprocess_dataset(results, out, config, chunks=path, rows_per_partition=2_000)
    assert_frame_equal(pl.read_parquet(out), want)
    assert len(seen) == 6 and max(seen) < store.height  # each partition got only its rows


# --- reading ahead and writing behind ------------------------------------------------


def test_the_next_partition_is_read_while_one_is_processed() -> None:
    """Partition 1 is read while partition 0 is in use (the consumer waits for it),
    and the pieces are written in order, one write at a time."""
    started = threading.Event()
    written: list[int] = []

    def read(k: int) -> int:
        if k == 1:
            started.set()
        return k

    with Behind() as behind:
        for k in behind.read_ahead(map(read, range(3))):
            if k == 0:
                assert started.wait(10), "partition 1 was not read ahead"
            behind.write(written.append, k)
    assert written == [0, 1, 2]


def test_a_failed_write_raises_and_a_failed_run_waits_for_its_write() -> None:
    """A write's error reaches the run (at the next write or at the end); an error of
    the run itself wins over the write under way, which is finished first."""

    def fail(piece: int) -> None:
        raise OSError(f"disk full at {piece}")

    with pytest.raises(OSError, match="disk full at 0"), Behind() as behind:
        behind.write(fail, 0)
    with pytest.raises(OSError, match="disk full at 0"), Behind() as behind:
        behind.write(fail, 0)
        behind.write(fail, 1)
    done = threading.Event()

    def slow(piece: int) -> None:
        time.sleep(0.2)
        done.set()

    with pytest.raises(DataError, match="bad rows"), Behind() as behind:
        behind.write(slow, 0)
        raise DataError("bad rows")
    assert done.is_set()
