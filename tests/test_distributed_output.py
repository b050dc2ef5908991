"""An engine's ``output=`` is checked before anything else, in the Python API as on the
CLI: a folder that is not a previous output, or a URI no filesystem takes, is refused
before any input is read and before a cluster is reached or started, with the CLI's
message; the folder is left as it was."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from ragframe import PostprocessConfig
from ragframe.cli import main
from ragframe.errors import RagframeError

ENGINES = ["dask", "ray"]


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err.removeprefix("error: ").rstrip("\n")


def _outputs(tmp_path: Path) -> list[str]:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    return [f"{mine}/", "nosuch://bucket/out/"]


@pytest.mark.parametrize("name", ENGINES)
def test_the_output_is_refused_before_the_inputs_are_read(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"ragframe.distributed.{name}")
    missing = str(tmp_path / "missing.parquet")  # an input error, were it read first
    for output in _outputs(tmp_path):
        with pytest.raises(RagframeError) as raised:
            module.postprocess(missing, PostprocessConfig(), chunks=missing, output=output)
        cli = ["postprocess", missing, "--chunks", missing, "-o", output, "--engine", name]
        assert str(raised.value) == _cli_error(cli, capsys)
        assert "missing.parquet" not in str(raised.value)
        with pytest.raises(RagframeError, match="^" + re.escape(str(raised.value))):
            module.fetch(missing, missing, output=output)
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()  # no cluster was started for it
