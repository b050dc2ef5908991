"""The engines' public functions (built once for every engine by
``ragframe.distributed._public``) have the signatures they had when each was written out:
the single-machine stage's parameters (inputs typed ``Any``; ``level`` and ``progress``
left out), the engine options, then the engine's own (Dask: ``client``, ``retries=2``;
Ray: ``retries=3``). A call is checked against that signature before anything runs."""

from __future__ import annotations

import inspect
import pickle
from types import ModuleType

import pytest

import ragframe
from ragframe.distributed import dask as rd
from ragframe.distributed import ray as rr

_CONFIG = "config: '{}Config | Mapping[str, Any] | None' = None"
_OPTIONS = (
    "output: 'str | os.PathLike[str] | None' = None, collect: 'bool' = False, "
    "partitions: 'int | None' = None, broadcast: 'bool | None' = None"
)
_METRICS = "('context_recall', 'context_ndcg', 'relevant_share', 'chars_used', 'duplicate_chars')"
DASK = {
    "postprocess": (
        f"(candidates: 'Any', {_CONFIG.format('Postprocess')}, *, chunks: 'Any' = None, "
        f"{_OPTIONS}, client: 'Any' = None, retries: 'int' = 2) -> 'Any'"
    ),
    "fetch": (
        f"(requests: 'Any', documents: 'Any', {_CONFIG.format('Fetch')}, *, sizes: 'Any' = "
        f"None, {_OPTIONS}, client: 'Any' = None, retries: 'int' = 2) -> 'Any'"
    ),
    "evaluate": (
        "(qrels: 'Any', *, candidates: 'Any' = None, blocks: 'Any' = None, k: 'int | "
        "Sequence[int]' = (10,), max_blocks: 'int | None' = None, max_characters: 'int | "
        "None' = None, chunks: 'Any' = None, max_tokens: 'int | None' = None, ties: 'Ties' = "
        "'input', partitions: 'int | None' = None, client: 'Any' = None, retries: 'int' = 2) "
        "-> 'pl.DataFrame'"
    ),
    "sweep": (
        "(candidates: 'Any', grid: 'Grid', qrels: 'Any', *, chunks: 'Any' = None, baseline: "
        "'int | PostprocessConfig | None' = None, metric: 'str' = 'context_recall', cost: "
        f"'str | None' = None, metrics: 'Sequence[str]' = {_METRICS}, seed: 'int' = 0, "
        "partitions: 'int | None' = None, broadcast: 'bool | None' = None, client: 'Any' = "
        "None, retries: 'int' = 2) -> 'SweepResult'"
    ),
}
"""Dask's signatures, as they were written out (before the functions were built)."""
NAMES = (*DASK, "chunk")
CHUNK = (
    "(documents: 'Any', config: 'WindowConfig | Mapping[str, Any]', *, output: 'str | "
    "os.PathLike[str] | None' = None, collect: 'bool' = False, partitions: 'int | None' = "
    "None, client: 'Any' = None, retries: 'int' = 2) -> 'Any'"
)
"""``chunk``'s (added with the stage: the engine options but ``broadcast``)."""
DASK_AND_CHUNK = {**DASK, "chunk": CHUNK}


@pytest.mark.parametrize("name", NAMES)
def test_dask_signature_is_the_written_one(name: str) -> None:
    assert str(inspect.signature(getattr(rd, name))) == DASK_AND_CHUNK[name]


@pytest.mark.parametrize("name", NAMES)
def test_ray_signature_is_dask_without_client_and_three_retries(name: str) -> None:
    expected = DASK_AND_CHUNK[name].replace("client: 'Any' = None, ", "").replace("= 2)", "= 3)")
    assert "client" not in expected
    assert str(inspect.signature(getattr(rr, name))) == expected


@pytest.mark.parametrize("module", [rd, rr])
@pytest.mark.parametrize("name", NAMES)
def test_the_single_machine_parameters_come_first(module: ModuleType, name: str) -> None:
    """Every parameter of the single-machine function but ``level``/``progress``, in its
    order, kind and default, before the engine's own."""
    local = inspect.signature(getattr(ragframe, name)).parameters.values()
    taken = [p for p in local if p.name not in ("level", "progress")]
    engine = list(inspect.signature(getattr(module, name)).parameters.values())
    assert [(p.name, p.kind, p.default) for p in engine[: len(taken)]] == [
        (p.name, p.kind, p.default) for p in taken
    ]
    rest = [p for p in engine[len(taken) :] if p.name != "client"]
    assert rest[-1].name == "retries"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest)


@pytest.mark.parametrize("module", [rd, rr])
@pytest.mark.parametrize("name", NAMES)
def test_names_docs_and_pickling(module: ModuleType, name: str) -> None:
    function = getattr(module, name)
    assert function.__name__ == function.__qualname__ == name
    assert function.__module__ == module.__name__
    engine = "Dask" if module is rd else "Ray"
    assert function.__doc__.startswith(f":func:`ragframe.{name}` on {engine}")
    assert pickle.loads(pickle.dumps(function)) is function  # by reference


def test_a_call_is_checked_against_the_signature() -> None:
    with pytest.raises(TypeError, match="client"):
        rr.postprocess("x.parquet", client=object())  # Ray takes no client
    with pytest.raises(TypeError, match="grid"):
        rd.sweep("x.parquet", qrels="q.parquet")
    with pytest.raises(TypeError, match="too many positional"):
        rd.evaluate("q.parquet", "x.parquet")
    with pytest.raises(TypeError, match="unexpected keyword argument 'level'"):
        rd.evaluate("q.parquet", candidates="x.parquet", level="chunk")
