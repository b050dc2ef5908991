"""The dataset entries are built from one definition (``ragframe.dataset._Entry``): each
shows and takes the signature it was written with, is checked against it as a written
function is, and keeps its name, docstring and doctest."""

from __future__ import annotations

import doctest
import inspect
import pickle

import pytest

import ragframe
from ragframe import dataset

WRITTEN = {
    "postprocess_dataset": "(candidates: 'Any', destination: 'Path', config: 'PostprocessConfig"
    " | Mapping[str, Any] | None' = None, *, chunks: 'Any' = None, rows_per_partition: 'int' ="
    " 2000000, progress: 'bool | None' = None, fmt: 'str | None' = None) -> 'RunSummary'",
    "fetch_dataset": "(requests: 'Any', documents: 'Any', destination: 'Path', config: "
    "'FetchConfig | Mapping[str, Any] | None' = None, *, sizes: 'Any' = None, "
    "text_per_partition: 'int' = 16777216, progress: 'bool | None' = None, fmt: 'str | None'"
    " = None) -> 'RunSummary'",
    "chunk_dataset": "(documents: 'Any', destination: 'Path', config: 'WindowConfig | "
    "Mapping[str, Any]', *, text_per_partition: 'int' = 33554432, progress: 'bool | None' = "
    "None, fmt: 'str | None' = None) -> 'RunSummary'",
}


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_each_entry_shows_its_written_signature_name_and_doc(name: str) -> None:
    function = getattr(ragframe, name)
    assert function is getattr(dataset, name)
    assert str(inspect.signature(function)) == WRITTEN[name]
    assert function.__name__ == function.__qualname__ == name
    assert function.__module__ == "ragframe.dataset"
    assert (function.__doc__ or "").startswith(f":func:`ragframe.{name.split('_')[0]}` of")
    assert pickle.loads(pickle.dumps(function)) is function
    found = doctest.DocTestFinder().find(dataset)
    assert [t for t in found if t.name == f"ragframe.dataset.{name}" and t.examples]


def test_a_call_is_checked_against_the_signature(tmp_path: object) -> None:
    out = f"{tmp_path}/c.parquet"
    with pytest.raises(TypeError, match="unexpected keyword argument 'chunks'"):
        ragframe.chunk_dataset({"doc_id": [1]}, out, {}, chunks=None)
    with pytest.raises(TypeError, match="missing a required argument: 'config'"):
        ragframe.chunk_dataset({"doc_id": [1]}, out)
    with pytest.raises(TypeError, match="too many positional arguments"):
        ragframe.postprocess_dataset(1, out, None, None)
    with pytest.raises(ragframe.ConfigError, match="rows_per_partition must be an integer >= 1"):
        ragframe.postprocess_dataset({"query_id": [1]}, out, rows_per_partition=0)
