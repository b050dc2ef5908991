"""A temporary that a writer still adds to after a failure (a Polars sink that raised on
one file while its other writers finish theirs) is removed until it stays gone."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ragframe.io import _atomic


def test_a_temporary_written_to_after_the_failure_is_removed(tmp_path: Path) -> None:
    folder = _atomic.temp_name(tmp_path / "out.parquet")
    (folder / "k=0").mkdir(parents=True)
    stop = time.monotonic() + 0.3

    def late_writer() -> None:  # files keep appearing for a while
        n = 0
        while time.monotonic() < stop:
            (folder / f"k={n % 3}").mkdir(parents=True, exist_ok=True)
            (folder / f"k={n % 3}" / f"{n}.parquet").write_bytes(b"PAR1")
            n += 1
            time.sleep(0.01)

    writer = threading.Thread(target=late_writer)
    writer.start()
    time.sleep(0.02)
    _atomic.remove_settled(folder, quiet=0.05, limit=2.0)
    writer.join()
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_plain_remove_can_leave_what_a_late_writer_adds(tmp_path: Path) -> None:
    """Why :func:`~ragframe.io._atomic.remove_settled` exists: one removal while a writer
    still writes leaves its later files behind."""
    folder = _atomic.temp_name(tmp_path / "out.parquet")
    folder.mkdir()
    _atomic.remove(folder)
    (folder / "k=0").mkdir(parents=True)  # the late writer's next file
    (folder / "k=0" / "0.parquet").write_bytes(b"PAR1")
    assert folder.exists()
    _atomic.remove_settled(folder, quiet=0.01, limit=0.5)
    assert not folder.exists()
