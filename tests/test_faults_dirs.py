"""A directory input with symbolic link loops, broken links or files and folders that
cannot be read: one clear error naming the path, from the library and from the command
(one ``error:`` line, nothing written), on the local engine and on Dask and Ray (their
Parquet folders are walked the same way). A folder behind a link that is no loop is
read, as Polars reads it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ragframe import io
from ragframe.cli import main
from ragframe.dataset import postprocess_dataset
from ragframe.driver._sources import parquet_files
from ragframe.errors import RagframeError
from tests import clusters

RESULTS = pl.DataFrame(
    {
        "query_id": [q for q in range(50) for _ in range(2)],
        "entity_id": list(range(100)),
        "chunk_index": [0, 1] * 50,
        "text": [f"candidate {i} text" for i in range(100)],
        "similarity": [1.0 - i / 100 for i in range(100)],
    }
)


def dataset(folder: Path) -> Path:
    """A dataset of two parts, one in a subfolder."""
    root = folder / "results"
    (root / "sub").mkdir(parents=True)
    RESULTS.slice(0, 50).write_parquet(root / "part-00000.parquet")
    RESULTS.slice(50).write_parquet(root / "sub" / "part-00001.parquet")
    return root


def loop_to_root(root: Path) -> tuple[str, str]:
    (root / "sub" / "up").symlink_to("..")
    return f"{root}/sub/up", r"\.\."


def loop_to_itself(root: Path) -> tuple[str, str]:
    (root / "sub" / "again").symlink_to(".")
    return f"{root}/sub/again", r"\."


def second_link(root: Path) -> tuple[str, str]:
    (root / "copy").symlink_to(root / "sub")
    return f"{root}/copy", f"{root}/sub"


LINKS = {"loop-to-root": loop_to_root, "loop-to-itself": loop_to_itself, "second-link": second_link}


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("kind", list(LINKS))
def test_link_loop_is_one_error(tmp_path: Path, kind: str) -> None:
    root = dataset(tmp_path)
    link, target = LINKS[kind](root)
    message = (
        rf"input directory {root} reaches one folder twice, as .* and as .*, through the "
        rf"symbolic link {link} -> "
    )
    with pytest.raises(RagframeError, match=message + target):
        io.source(root)
    with pytest.raises(RagframeError, match=message):
        postprocess_dataset(root, tmp_path / "out.parquet", progress=False)
    with pytest.raises(RagframeError, match=message):  # Dask and Ray list folders so
        parquet_files(root)
    assert not (tmp_path / "out.parquet").exists()


def test_broken_link_is_one_error(tmp_path: Path) -> None:
    root = dataset(tmp_path)
    (root / "sub" / "gone.parquet").symlink_to(tmp_path / "nowhere.parquet")
    message = (
        rf"input directory {root} holds a broken symbolic link: {root}/sub/gone.parquet -> "
        rf"{tmp_path}/nowhere.parquet \(its target does not exist\)"
    )
    with pytest.raises(RagframeError, match=message):
        io.scan_table(root)
    with pytest.raises(RagframeError, match=message):
        parquet_files(root)


def test_hidden_broken_link_is_one_error(tmp_path: Path) -> None:
    """A hidden name is no part of the input, but Polars fails on a broken link there
    (an editor's lock link) with a message that names nothing: it is refused, named."""
    root = dataset(tmp_path)
    (root / ".#part-00000.parquet").symlink_to("user@host.1234")
    message = rf"holds a broken symbolic link: {root}/.#part-00000.parquet -> user@host.1234"
    with pytest.raises(RagframeError, match=message):
        io.read_table(root)


def test_hidden_names_are_skipped(tmp_path: Path) -> None:
    root = dataset(tmp_path)
    (root / ".part-00000.parquet.crc").write_bytes(b"\x00\x01")
    (root / "_SUCCESS").write_bytes(b"")
    assert io.read_table(root).sort("entity_id").equals(RESULTS)


def test_linked_folder_is_read(tmp_path: Path) -> None:
    """A folder behind a link (no loop) is part of the input: every engine lists its
    files, as Polars reads them."""
    root = dataset(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    more = RESULTS.with_columns(pl.col("query_id") + 1000, pl.col("entity_id") + 1000)
    more.write_parquet(elsewhere / "part-00002.parquet")
    (root / "linked").symlink_to(elsewhere)
    assert root / "linked" / "part-00002.parquet" in io.source(root).files
    assert f"{root}/linked/part-00002.parquet" in parquet_files(root)
    out = tmp_path / "blocks.parquet"
    run = postprocess_dataset(root, out, progress=False)
    assert run.counts["candidates"] == 200
    assert pl.read_parquet(out)["query_id"].n_unique() == 100


@pytest.mark.parametrize("kind", ["loop-to-root", "second-link"])
def test_command_prints_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    root = dataset(tmp_path)
    link, _ = LINKS[kind](root)
    before = _listing(tmp_path)
    code = main(["postprocess", str(root), "-o", str(tmp_path / "out.parquet"), "-q"])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: input directory {root} reaches one folder twice")
    assert f"symbolic link {link} -> " in lines[0]
    assert _listing(tmp_path) == before


def _run(args: list[str], *, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "RAY_DISABLE_USAGE_STATS": "1"}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ragframe.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("engine", ["dask", clusters.RAY_SLOW])
def test_engine_command_refuses_a_loop(tmp_path: Path, engine: str) -> None:
    pytest.importorskip("distributed" if engine == "dask" else "ray")
    root = dataset(tmp_path)
    link, _ = loop_to_root(root)
    done = _run(["postprocess", str(root), "-o", str(tmp_path / "o.parquet"), "--engine", engine])
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"symbolic link {link} -> .." in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o.parquet").exists()


def _as_a_user() -> tuple[str, ...]:
    """What makes a command run with permissions checked: nothing for a user; for root
    (who reads anything), ``setpriv`` taking away the capabilities that bypass them
    (the files stay root's own, so mode 000 shuts root out like anyone)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads anything, and setpriv (to drop that) is not installed")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


def _unreadable_run(folder: Path, what: str) -> subprocess.CompletedProcess[str]:
    """The command over a dataset of which ``what`` cannot be read: a file of it, a
    folder of it, or (``single``) the one file given."""
    root = dataset(folder)
    (root / "sub" if what == "folder" else root / "part-00000.parquet").chmod(0)
    given = root / "part-00000.parquet" if what == "single" else root
    out = folder / "out.parquet"
    try:
        return _run(["postprocess", str(given), "-o", str(out), "-q"], prefix=_as_a_user())
    finally:
        (root / "sub").chmod(0o755)
        (root / "part-00000.parquet").chmod(0o644)


@pytest.mark.parametrize("what", ["file", "single"])
def test_unreadable_file_is_one_error(tmp_path: Path, what: str) -> None:
    done = _unreadable_run(tmp_path, what)
    root = tmp_path / "results"
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: cannot read {root}/part-00000.parquet: permission denied; expected a file "
        "this user can read"
    ]
    assert not (tmp_path / "out.parquet").exists()


def test_unreadable_folder_is_one_error(tmp_path: Path) -> None:
    done = _unreadable_run(tmp_path, "folder")
    root = tmp_path / "results"
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: input directory {root}: cannot list {root}/sub (Permission denied); "
        "expected folders this user can read"
    ]
    assert not (tmp_path / "out.parquet").exists()
