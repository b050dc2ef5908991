"""The engines' public functions (:mod:`.dask`, :mod:`.ray`), each stage's defined once
for every engine: its parameters are the single-machine function's (the inputs, which
may be an engine's frames, typed ``Any``; what an engine does not take, left out), then
the engine options (:func:`_engine_options`), then the engine's own (Dask's ``client``;
``retries``: the keyword-only parameters of the function that makes the engine); its
body is one function for every engine (:func:`_postprocess` ...); its docstring, the
engine module's.

A call is checked against that signature as a written function's is (a ``TypeError``
for an unknown or missing argument), so the signature ``inspect`` shows is the one the
function takes.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import polars as pl

from ragframe.driver import STAGES, Engine, _gather, run_stage
from ragframe.driver._commit import check_folder
from ragframe.driver._run import run_written
from ragframe.driver._sources import (
    config_of,
    evaluate_options,
    local_table,
    offsets_of,
    one_input,
)
from ragframe.evaluate import SweepResult
from ragframe.evaluate import evaluate as local_evaluate
from ragframe.evaluate import sweep as local_sweep
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._sweep import chosen, configurations
from ragframe.fetch import FetchConfig
from ragframe.fetch import fetch as local_fetch
from ragframe.postprocess import PostprocessConfig
from ragframe.postprocess import postprocess as local_postprocess
from ragframe.window import WindowConfig
from ragframe.window import chunk as local_chunk

R = TypeVar("R")
Given = Mapping[str, Any]
"""A call's arguments by name, every parameter there (defaults applied)."""


def _engine_options(
    *,
    output: str | os.PathLike[str] | None = None,
    collect: bool = False,
    partitions: int | None = None,
    broadcast: bool | None = None,
) -> None:
    """The parameters an engine's function adds to the single-machine one's (each stage
    takes those of them it has: :attr:`Public.options`); only its signature is read."""


@dataclass(frozen=True)
class Public(Generic[R]):
    """One stage's public function on the engines: the single-machine function whose
    parameters it takes, and its body (``run(engine, given)``)."""

    local: Callable[..., Any]
    run: Callable[[Engine, Given], R]
    returns: str
    """The return annotation, as ``inspect`` shows it."""
    inputs: tuple[str, ...] = ()
    """The parameters that take an engine's frames too (annotated ``Any``)."""
    left_out: tuple[str, ...] = ()
    """The single-machine parameters an engine does not take."""
    options: tuple[str, ...] = ("output", "collect", "partitions", "broadcast")
    """The :func:`_engine_options` it takes."""

    def signature(self, make: Callable[..., Engine]) -> inspect.Signature:
        """The function's signature on the engine ``make`` makes (its keyword-only
        parameters are the engine's own)."""
        local = inspect.signature(self.local).parameters.values()
        taken = [
            p.replace(annotation="Any") if p.name in self.inputs else p
            for p in local
            if p.name not in self.left_out
        ]
        added = inspect.signature(_engine_options).parameters
        own = inspect.signature(make).parameters.values()
        engine = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
        extra = [added[name] for name in self.options]
        return inspect.Signature([*taken, *extra, *engine], return_annotation=self.returns)

    def on(self, make: Callable[..., Engine], doc: str) -> Callable[..., R]:
        """The function of the module that defines ``make``, documented by ``doc``."""
        signature = self.signature(make)
        own = [p.name for p in inspect.signature(make).parameters.values()]
        run = self.run

        def function(*args: Any, **kwargs: Any) -> R:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = dict(bound.arguments)
            if given.get("output") is not None:  # before any input is read, as the CLI
                given["output"] = check_folder(given["output"])  # (and before the cluster)
            engine = make(**{name: given.pop(name) for name in own})
            return run(engine, given)

        function.__signature__ = signature  # type: ignore[attr-defined]
        function.__name__ = function.__qualname__ = self.local.__name__
        function.__module__ = make.__module__
        function.__doc__ = doc
        return function


def _written(
    name: str, engine: Engine, source: Any, options: Given, store: Any, given: Given
) -> Any:
    """Stage ``name`` run and given back as the engines' postprocess, fetch and chunk
    give it (chunk has no store to broadcast)."""
    return run_written(
        name,
        engine,
        source,
        options,
        store=store,
        broadcast=given.get("broadcast"),
        partitions=given["partitions"],
        output=given["output"],
        collect=given["collect"],
    )


def _postprocess(engine: Engine, given: Given) -> Any:
    config = config_of(given["config"], PostprocessConfig)
    chunks = given["chunks"]
    return _written("postprocess", engine, given["candidates"], {"config": config}, chunks, given)


def _fetch(engine: Engine, given: Given) -> Any:
    sizes = None if given["sizes"] is None else local_table(given["sizes"])
    options = {"config": config_of(given["config"], FetchConfig), "sizes": sizes}
    return _written("fetch", engine, given["requests"], options, given["documents"], given)


def _chunk(engine: Engine, given: Given) -> Any:
    options = {"config": config_of(given["config"], WindowConfig)}
    return _written("chunk", engine, given["documents"], options, None, given)


def _evaluate(engine: Engine, given: Given) -> pl.DataFrame:
    """Collected: one row per query, equal to ``ragframe.evaluate(...).collect()``;
    ``qrels`` and the store's offsets broadcast, each partition's rows gathered on the
    driver (small tables) and completed there by the single-machine code."""
    source, is_blocks = one_input(given["candidates"], given["blocks"])
    names = ("k", "max_blocks", "max_characters", "max_tokens", "ties")
    options = evaluate_options(*(given[name] for name in names))
    judged = judgements(given["qrels"])
    offsets = offsets_of(given["chunks"])
    ran = run_stage(
        STAGES["evaluate"],
        engine,
        source,
        options={"qrels": judged, "blocks": is_blocks, "options": options},
        store=offsets,
        broadcast=True,
        partitions=given["partitions"],
    )
    empty_offsets = None if offsets is None else offsets.slice(0, 0)
    return _gather.evaluate_table(
        ran.result,
        judged,
        ran.schema,
        blocks=is_blocks,
        options={**options, "chunks": empty_offsets},
    )


def _sweep(engine: Engine, given: Given) -> SweepResult:
    """Each partition's per-(configuration, query) rows, the summary computed on the
    driver from all of them; equal to ``ragframe.sweep(...)``."""
    configs, _ = configurations(given["grid"])
    metric, cost, metrics = chosen(configs, given["metric"], given["cost"], given["metrics"])
    judged = judgements(given["qrels"])
    ran = run_stage(
        STAGES["sweep"],
        engine,
        given["candidates"],
        options={"configs": configs, "qrels": judged},
        store=given["chunks"],
        broadcast=given["broadcast"],
        partitions=given["partitions"],
    )
    return _gather.sweep_table(
        ran.result,
        configs,
        judged,
        ran.schema,
        chunks=ran.store,
        baseline=given["baseline"],
        metric=metric,
        cost=cost,
        metrics=metrics,
        seed=given["seed"],
    )


CHUNK = Public(
    local_chunk, _chunk, "Any", inputs=("documents",), options=("output", "collect", "partitions")
)
POSTPROCESS = Public(local_postprocess, _postprocess, "Any", inputs=("candidates", "chunks"))
FETCH = Public(local_fetch, _fetch, "Any", inputs=("requests", "documents", "sizes"))
EVALUATE = Public(
    local_evaluate, _evaluate, "pl.DataFrame", left_out=("level",), options=("partitions",)
)
SWEEP = Public(
    local_sweep,
    _sweep,
    "SweepResult",
    left_out=("progress",),
    options=("partitions", "broadcast"),
)
