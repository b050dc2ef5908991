"""Files in and out: modes, symbolic links, temporaries, interrupts, messages that name
the user's path, read errors that name the line; and a CLI run writes nothing into the
installed package."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

import ragframe
from ragframe import io
from ragframe.errors import RagframeError

DF = pl.DataFrame({"a": [1, 2], "b": ["x", "y"]})


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_a_new_file_gets_the_umask_mode(tmp_path: Path, umask_027: None) -> None:
    io.write_table(DF, tmp_path / "new.parquet")
    assert _mode(tmp_path / "new.parquet") == 0o640


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o600, 0o660])
def test_an_overwritten_file_keeps_its_mode(tmp_path: Path, umask_027: None, mode: int) -> None:
    target = tmp_path / "kept.csv"
    target.write_text("old\n")
    target.chmod(mode)
    io.write_table(DF, target)
    assert _mode(target) == mode
    assert pl.read_csv(target).equals(DF)


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "data" / "real.parquet"
    real.parent.mkdir()
    real.write_bytes(b"old")
    real.chmod(0o640)
    link = tmp_path / "link.parquet"
    link.symlink_to(Path("data") / "real.parquet")  # relative, as users make them
    io.write_table(DF, link)
    assert link.is_symlink() and os.readlink(link) == os.path.join("data", "real.parquet")
    assert pl.read_parquet(real).equals(DF)
    assert _mode(real) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "link.parquet"]
    assert [p.name for p in real.parent.iterdir()] == ["real.parquet"]


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_stale_temporaries_of_the_same_output_are_removed(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getppid()
    stale = tmp_path / f".out.parquet{io.TEMP_MARK}{dead}-0badcafe"
    running = tmp_path / f".out.parquet{io.TEMP_MARK}{alive}-0badcafe"
    other = tmp_path / f".other.parquet{io.TEMP_MARK}{dead}-0badcafe"
    unrelated = tmp_path / ".out.parquet.mine"
    for path in (stale, running, other, unrelated):
        path.write_bytes(b"x" * 100)
    assert io.stale_temporaries(tmp_path / "out.parquet") == [stale]
    io.write_table(DF, tmp_path / "out.parquet")
    assert not stale.exists()
    assert running.exists() and other.exists() and unrelated.exists()


def test_an_interrupt_during_the_write_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.parquet"
    target.write_bytes(b"previous")

    def interrupted(df: pl.DataFrame, path: str, fmt: str) -> None:
        Path(path).write_bytes(b"partial")
        assert io.TEMP_MARK in Path(path).name and Path(path).name.startswith(".out.parquet")
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.write_table(DF, target)
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]
    assert target.read_bytes() == b"previous"


def test_a_failed_write_names_the_users_path_not_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(df: pl.DataFrame, path: str, fmt: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(io, "_write", full)
    target = tmp_path / "out.parquet"
    with pytest.raises(RagframeError) as caught:
        io.write_table(DF, target)
    assert (
        str(caught.value)
        == f"cannot write {target}: no space left on the device; nothing was written"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("folder", "cannot write {p}: it is a directory; expected a file path such as "),
        ("file.txt/x.parquet", "cannot write {p}: {d}/file.txt is not a directory"),
        ("x.xlsx", "unsupported file extension '.xlsx' for {p}; expected one of "),
        ("noext", "no file extension for {p}; expected one of "),
    ],
    ids=["directory", "parent-is-a-file", "extension", "no-extension"],
)
def test_check_output_refuses(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("x")
    path = tmp_path / name
    with pytest.raises(RagframeError) as caught:
        io.check_output(path)
    assert str(caught.value).startswith(message.format(p=path, d=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "folder"]


def test_check_output_on_a_filesystem_without_files() -> None:
    with pytest.raises(RagframeError, match=r"^cannot write /proc/x\.parquet: cannot create a "):
        io.check_output("/proc/x.parquet")


def test_missing_parents_are_checked_then_created_only_by_the_write(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.jsonl"
    assert io.check_output(target) == target
    assert list(tmp_path.iterdir()) == []  # the check creates nothing
    io.write_table(DF, target)
    assert pl.read_ndjson(target).equals(DF)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("r.csv", b"a,b\n1,x\n2,y,z\n", "line 3: 3 fields, expected 2"),
        ("r.csv", b"a,b\n1,x\n2\n", "line 3: 1 field, expected 2"),
        ("r.csv", b"a,b,a\n1,x,2\n", "line 1: duplicate column names in the header: 'a'"),
        ("r.csv", b"a,b\n1,x\n2,\xff\n", "line 3: invalid UTF-8 (byte 0xff at byte 3"),
        ("r.jsonl", b'{"a": 1}\n\n{"a": 2,}\n', "line 3: invalid JSON"),
        ("r.jsonl", b'{"a": 1}\n"text"\n', "line 2: expected one JSON object per line, got a str"),
        ("r.jsonl", b'{"a": "caf\xe9"}\n', "line 1: invalid UTF-8 (byte 0xe9"),
        ("r.parquet", b"", "the file is empty"),
        ("r.parquet", b"PAR1 not really", "cannot read"),
    ],
    ids=[
        "extra-field",
        "missing-field",
        "duplicates",
        "utf8-csv",
        "json",
        "not-object",
        "utf8-jsonl",
        "empty",
        "corrupt",
    ],
)
def test_read_errors_name_the_file_and_line(
    tmp_path: Path, name: str, data: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(RagframeError) as caught:
        io.read_table(path)
    text = str(caught.value)
    assert text.startswith(f"cannot read {path}: "), text
    assert message in text and "\n" not in text, text


def test_the_encoding_hint() -> None:
    assert "re-encode it first, e.g. iconv -f latin1 -t utf-8" in io._textfiles._ENCODING_HINT


def test_a_cli_run_writes_nothing_into_the_package(tmp_path: Path) -> None:
    """The compiled-kernel cache and everything else a run writes stay outside the
    installed package, so an install or uninstall leaves nothing behind (issue 12 #1)."""
    package = Path(ragframe.__file__).resolve().parent

    def files() -> dict[str, float]:
        return {str(p): p.stat().st_mtime for p in package.rglob("*") if p.suffix != ".pyc"}

    before = files()
    io.write_table(
        pl.DataFrame(
            {
                "query_id": [1],
                "entity_id": [1],
                "chunk_index": [0],
                "text": ["a b"],
                "similarity": [0.9],
            }
        ),
        tmp_path / "r.parquet",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragframe.cli",
            "postprocess",
            str(tmp_path / "r.parquet"),
            "-o",
            str(tmp_path / "b.parquet"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert files() == before


# --- datasets in ------------------------------------------------------------------------


def _parts(folder: Path, fmt: str = "parquet", n: int = 3) -> pl.DataFrame:
    """``n`` files of one format in ``folder``; returns their rows, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = [pl.DataFrame({"a": [k * 10, k * 10 + 1], "b": [f"x{k}", f"y{k}"]}) for k in range(n)]
    for k, part in enumerate(frames):
        io.write_table(part, folder / f"f{k}.{fmt}")
    return pl.concat(frames)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl", "arrow"])
def test_a_directory_and_a_glob_read_every_file_in_order(tmp_path: Path, fmt: str) -> None:
    want = _parts(tmp_path / "d", fmt)
    (tmp_path / "d" / "_SUCCESS").write_text("")  # hidden names are skipped
    (tmp_path / "d" / f".f9.{fmt}.crc").write_text("x")
    assert io.read_table(tmp_path / "d").equals(want)
    assert io.read_table(tmp_path / "d" / f"f*.{fmt}").equals(want)
    assert io.source(tmp_path / "d").files == tuple(
        tmp_path / "d" / f"f{k}.{fmt}" for k in range(3)
    )


def test_a_hive_dataset_reads_its_keys_as_columns(tmp_path: Path) -> None:
    for year in (2023, 2024):
        _parts(tmp_path / "run=7" / "data" / f"year={year}", n=1)
    got = io.read_table(tmp_path / "run=7" / "data")
    assert got.columns == ["a", "b", "year"]  # a key=value above the dataset is not read
    assert got["year"].to_list() == [2023, 2023, 2024, 2024]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: d.mkdir(), "input directory has no table files: {d}; expected Parquet"),
        (
            lambda d: (_parts(d), (d / "notes.txt").write_text("x")),
            "input {d} holds a file that is not a table: {d}/notes.txt; expected table files",
        ),
        (
            lambda d: (_parts(d), _parts(d, "csv", n=1)),
            "input {d} holds files of several formats (.csv, .parquet); expected one format",
        ),
        (
            lambda d: (_parts(d), _parts(d / ".ipynb_checkpoints", n=1)),
            "input directory {d} holds a hidden folder with files: {d}/.ipynb_checkpoints",
        ),
        (
            lambda d: _parts(d / "k=1", "csv"),
            "input directory {d} holds csv files in subfolders ({d}/k=1/f0.csv); expected "
            "them side by side (partition folders need Parquet)",
        ),
    ],
    ids=["empty", "not-a-table", "mixed", "hidden-folder", "nested-csv"],
)
def test_a_directory_that_is_not_one_table_is_refused(
    tmp_path: Path, setup: object, message: str
) -> None:
    folder = tmp_path / "d"
    setup(folder)  # type: ignore[operator]
    with pytest.raises(RagframeError) as caught:
        io.scan_table(folder)
    assert str(caught.value).startswith(message.format(d=folder)), caught.value


def test_a_glob_that_matches_nothing(tmp_path: Path) -> None:
    with pytest.raises(RagframeError, match=r"^no files match .*/\*\.parquet; expected at least"):
        io.scan_table(tmp_path / "*.parquet")
    with pytest.raises(RagframeError, match=r"^input directory not found: .*/nope/; expected"):
        io.scan_table(f"{tmp_path}/nope/")


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv", "jsonl"])
def test_standard_input_is_read_in_the_format_its_bytes_say(tmp_path: Path, fmt: str) -> None:
    io.write_table(DF, tmp_path / f"in.{fmt}")
    code = "from ragframe import io; print(io.read_table('-').to_dicts(), io.source('-').files[0])"
    with (tmp_path / f"in.{fmt}").open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", code], stdin=stdin, capture_output=True, text=True, check=True
        )
    rows, copy = done.stdout.strip().rsplit(" ", 1)
    assert rows == str(DF.to_dicts())
    assert Path(copy).name.startswith(".stdin" + io.TEMP_MARK)
    assert Path(copy).parent == Path(tempfile.gettempdir()) and not Path(copy).exists()


def test_bad_standard_input_names_standard_input() -> None:
    code = "from ragframe import io; io.read_table('-')"
    done = subprocess.run(
        [sys.executable, "-c", code], input=b"a,b\n1,2,3\n", capture_output=True, check=False
    )
    assert b"cannot read standard input: line 2: 3 fields, expected 2" in done.stderr


# --- datasets and pieces out ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv", "jsonl"])
def test_pieces_make_one_file_equal_to_the_whole(tmp_path: Path, fmt: str) -> None:
    whole = pl.DataFrame({"a": list(range(10)), "b": [[i, i + 1] for i in range(10)]})
    target = tmp_path / f"out.{fmt}"
    with io.open_output(target, whole.to_arrow().schema, pieces=3) as sink:
        for piece in whole.iter_slices(4):
            sink.write(piece)
        assert next(p.name for p in tmp_path.iterdir()).startswith(f".out.{fmt}{io.TEMP_MARK}")
    want = tmp_path / f"want.{fmt}"
    io.write_table(whole, want)
    assert io.read_table(target).equals(io.read_table(want))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, want.name])


def test_a_directory_output_is_parts_replaced_whole(tmp_path: Path, umask_027: None) -> None:
    target = f"{tmp_path}/parts/"
    io.write_table(DF, target)
    folder = tmp_path / "parts"
    assert [p.name for p in folder.iterdir()] == ["part-00000.parquet"]
    assert _mode(folder) == 0o750 and _mode(folder / "part-00000.parquet") == 0o640
    folder.chmod(0o700)
    with io.open_output(target, DF.to_arrow().schema) as sink:
        for piece in (DF, DF, DF):
            sink.write(piece)
    assert sorted(p.name for p in folder.iterdir()) == [f"part-0000{k}.parquet" for k in range(3)]
    assert pl.read_parquet(folder).equals(pl.concat([DF] * 3))
    assert _mode(folder) == 0o700  # an overwritten output keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts"]


def test_a_directory_output_never_replaces_other_files(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(RagframeError) as caught:
        io.write_table(DF, f"{tmp_path}/mine/")
    assert str(caught.value).startswith(
        f"cannot write {tmp_path}/mine/: the directory holds other files than Parquet parts "
        "(notes.txt); expected a new or empty directory, or a previous output"
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(RagframeError, match=r"file/: it is not a directory; expected a directory"):
        io.write_table(DF, f"{tmp_path}/file/")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_an_interrupt_while_writing_parts_leaves_the_old_output(tmp_path: Path) -> None:
    target = f"{tmp_path}/parts/"
    io.write_table(DF, target)
    with pytest.raises(KeyboardInterrupt), io.open_output(target, DF.to_arrow().schema) as sink:
        sink.write(DF.head(1))
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts"]
    assert pl.read_parquet(tmp_path / "parts").equals(DF)


def test_stale_temporary_directories_are_removed(tmp_path: Path) -> None:
    stale = tmp_path / f".parts{io.TEMP_MARK}{_dead_pid()}-0badcafe"
    (stale / "x").mkdir(parents=True)
    io.write_table(DF, f"{tmp_path}/parts/")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts"]


@pytest.mark.parametrize("fmt", ["parquet", "ipc", "csv", "ndjson"])
def test_standard_output_gets_the_format_asked(tmp_path: Path, fmt: str) -> None:
    code = (
        "import polars as pl; from ragframe import io\n"
        f"df = pl.DataFrame({{'a': [1, 2], 'b': ['x', 'y']}})\n"
        f"with io.open_output('-', df.to_arrow().schema, fmt={fmt!r}) as sink:\n"
        "    sink.write(df); sink.write(df)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    suffix = {"ipc": "arrow", "ndjson": "jsonl"}.get(fmt, fmt)
    (tmp_path / f"o.{suffix}").write_bytes(done.stdout)
    assert io.read_table(tmp_path / f"o.{suffix}").equals(pl.concat([DF, DF]))


def test_a_parquet_file_written_whole_has_a_row_group_per_half_thread(tmp_path: Path) -> None:
    # one row group is compressed on one CPU: a large table gets two a thread
    import pyarrow.parquet as pq

    rows = 2 * pl.thread_pool_size() * io.ROW_GROUP_ROWS[0] * 2
    frame = pl.DataFrame({"n": range(rows), "text": [f"row {i} " * 8 for i in range(rows)]})
    path = tmp_path / "out.parquet"
    io.write_table(frame, path)
    assert pq.ParquetFile(path).metadata.num_row_groups == 2 * pl.thread_pool_size()
    assert pl.read_parquet(path).equals(frame)
    small = tmp_path / "small.parquet"
    io.write_table(frame.head(100), small)
    assert pq.ParquetFile(small).metadata.num_row_groups == 1
    assert io.row_group_rows(10**9) == io.ROW_GROUP_ROWS[1]


@pytest.mark.parametrize("target", ["one.parquet", "parts/"])
def test_pieces_written_by_arrow_keep_no_statistics_of_long_text(
    tmp_path: Path, target: str
) -> None:
    """A file of several pieces (and a directory's parts) is written by Arrow's writer
    at zstd level 3, every column with min/max statistics but the long text (no reader
    prunes by a block's text; they cost a tenth of the write), and reads back whole."""
    import pyarrow.parquet as pq

    frame = pl.DataFrame({"query_id": [1, 2, 3, 4], "text": ["a b", "c", "d e f", "g"]})
    path = tmp_path / target
    with io.open_output(f"{tmp_path}/{target}", frame.to_arrow().schema, pieces=2) as sink:
        sink.write(frame.head(2))
        sink.write(frame.tail(2))
    files = sorted(path.glob("*.parquet")) if target.endswith("/") else [path]
    for file in files:
        meta = pq.ParquetFile(file).metadata
        for group in range(meta.num_row_groups):
            columns = {meta.row_group(group).column(j).path_in_schema: j for j in range(2)}
            stats = {n: meta.row_group(group).column(j).statistics for n, j in columns.items()}
            assert stats["query_id"] is not None and stats["query_id"].has_min_max
            assert stats["text"] is None or not stats["text"].has_min_max
            assert meta.row_group(group).column(0).compression == "ZSTD"
    read = pl.read_parquet(files)
    assert read.equals(frame), read
