"""A write that runs out of room part way: the file-size limit (``ulimit -f``, set with
``RLIMIT_FSIZE`` in the command's own process, ``SIGXFSZ`` ignored so the write fails
with ``EFBIG``), or a full disk (a 64 KiB tmpfs mounted for the command alone, where
this user may mount one). Each run prints one ``error:`` line saying what ran out,
exits with 2, and leaves the output folder as it was: no partial output, no temporary,
no folder it created, an older output untouched."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROWS = 4000
RESULTS = pl.DataFrame(
    {
        "query_id": [i // 4 for i in range(ROWS)],
        "entity_id": list(range(ROWS)),
        "chunk_index": [0] * ROWS,
        "text": [hashlib.sha256(str(i).encode()).hexdigest() for i in range(ROWS)],
        "similarity": [1.0 - i / ROWS for i in range(ROWS)],
    }
)
DOCUMENTS = pl.DataFrame(
    {
        "doc_id": list(range(400)),
        "content": [
            "".join(hashlib.sha512(f"{i}.{j}".encode()).hexdigest() for j in range(4))
            for i in range(400)
        ],
    }
)
LIMIT = 60_000
"""Bytes a file may have: the inputs are smaller, every output larger."""
TOO_LARGE = "the file is too large (the file-size limit, ulimit -f, was reached)"
COMPILING = "ragframe: compiling kernels"
"""What a run with an empty kernel cache says on stderr before it compiles."""
FULL = "no space left on the device"
LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv.pop(1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from ragframe.cli import main
sys.argv[0] = "ragframe"
sys.exit(main())
"""


def _inputs(folder: Path) -> dict[str, str]:
    folder.mkdir(exist_ok=True)
    RESULTS.write_parquet(folder / "results.parquet")
    shuffled = RESULTS.sample(fraction=1.0, shuffle=True, seed=7)  # spilled per partition
    shuffled.write_parquet(folder / "shuffled.parquet")
    DOCUMENTS.write_parquet(folder / "documents.parquet")
    return {name: str(folder / f"{name}.parquet") for name in ("results", "shuffled", "documents")}


def _command(case: str, given: dict[str, str], out: str) -> list[str]:
    if case.startswith("postprocess"):
        extra = ["--rows-per-partition", "800"] if "pieces" in case else []
        source = given["shuffled"] if "spilled" in case else given["results"]
        return ["postprocess", source, "-o", out, "-q", *extra]
    if case == "chunk":
        return ["chunk", given["documents"], "--window-chars", "200", "-o", out, "-q"]
    return ["window", given["results"], "--window-chars", "200", "-o", out, "-q"]


def _listing(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in folder.rglob("*")
    }


CASES = [
    ("postprocess", "blocks.parquet"),
    ("postprocess", "blocks.csv"),
    ("postprocess", "blocks.jsonl"),
    ("postprocess", "blocks.arrow"),
    ("postprocess-pieces", "blocks.parquet"),
    ("postprocess-pieces", "blocks.csv"),
    ("postprocess-pieces", "new/folder/blocks.parquet"),
    ("postprocess-pieces-spilled", "blocks.parquet"),
    ("postprocess", "blocks/"),
    ("chunk", "chunks.parquet"),
    ("chunk", "chunks/"),
]


@pytest.mark.parametrize(("case", "name"), CASES, ids=[f"{c}-{n}" for c, n in CASES])
def test_file_size_limit(tmp_path: Path, case: str, name: str) -> None:
    given = _inputs(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / "older.parquet").write_bytes(b"an older output, kept")
    before = _listing(tmp_path)
    target = f"{out}/{name}"
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, str(LIMIT), *_command(case, given, target)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    # an empty kernel cache says it compiles (and cannot cache under the limit: not an error)
    lines = [x for x in done.stderr.splitlines() if not x.startswith(COMPILING)]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: cannot write ") and TOO_LARGE in lines[0], lines[0]
    assert lines[0].endswith("; nothing was written")
    assert _listing(tmp_path) == before


def test_an_older_output_survives(tmp_path: Path) -> None:
    """An output written before stays as it was when a new run of it fails."""
    given = _inputs(tmp_path / "in")
    target = tmp_path / "blocks.parquet"
    small = RESULTS.head(20)
    small.write_parquet(tmp_path / "small.parquet")
    from ragframe.cli import main

    assert main(["postprocess", str(tmp_path / "small.parquet"), "-o", str(target), "-q"]) == 0
    kept = target.read_bytes()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            LIMITED,
            str(LIMIT),
            "postprocess",
            given["results"],
            "-o",
            str(target),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2 and TOO_LARGE in done.stderr
    assert target.read_bytes() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocks.parquet", "in", "small.parquet"]


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


FULL_CASES = [
    ("postprocess", "blocks.parquet", "local"),
    ("postprocess-pieces", "blocks.csv", "local"),
    ("postprocess-pieces-spilled", "blocks.parquet", "local"),
    ("postprocess", "blocks/", "local"),
    ("chunk", "chunks.parquet", "local"),
    ("postprocess", "blocks.parquet", "dask"),
    ("postprocess", "blocks.parquet", "ray"),  # -m slow (a Ray start: tests/clusters.py)
]


@pytest.mark.parametrize(
    ("case", "name", "engine"),
    [
        pytest.param(*c, id="-".join(c), marks=[pytest.mark.slow] * (c[2] == "ray"))
        for c in FULL_CASES
    ],
)
def test_disk_full(tmp_path: Path, case: str, name: str, engine: str) -> None:
    """The output folder is a 64 KiB tmpfs, mounted in a mount namespace of the command's
    own (it goes away with it; what the folder holds afterwards is listed from inside)."""
    if not _can_mount():
        pytest.skip("mounting a small tmpfs needs root and unshare")
    if engine != "local":
        pytest.importorskip("distributed" if engine == "dask" else "ray")
    given = _inputs(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    listing = tmp_path / "listing.txt"
    command = _command(case, given, f"{out}/{name}")
    if engine != "local":
        command += ["--engine", engine]
    script = (
        'mount -t tmpfs -o size=64k tmpfs "$0" && cd "$0" && '
        'printf "an older output" > older.parquet && cd / && '
        '"$@"; rc=$?; ls -A "$0" > "$1.listing"; exit $rc'
    )
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "RAY_DISABLE_USAGE_STATS": "1"}
    shell = ["unshare", "-m", "sh", "-c", script.replace('"$1.listing"', f'"{listing}"')]
    done = subprocess.run(
        [*shell, str(out), sys.executable, "-m", "ragframe.cli", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and FULL in errors[0], done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert listing.read_text().split() == ["older.parquet"]
