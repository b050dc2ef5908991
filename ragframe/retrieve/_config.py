"""``RetrieveConfig``: how many chunks per query, by which retriever, with which
parameters, validated (SPEC 6)."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from ragframe._validate import as_config, set_ints, shown
from ragframe.errors import ConfigError

Method = Literal["bm25", "dense"]
Metric = Literal["cosine", "ip", "l2"]
FusionLevel = Literal["chunk", "document"]


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {list(allowed)}, got {shown(value)}")


def _check_real(name: str, value: object, low: float, high: float | None) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name} must be a number, got {shown(value)}")
    number = float(value)
    top = math.inf if high is None else high
    if math.isnan(number) or not low <= number <= top:
        limit = "" if high is None else f", at most {high}"
        raise ConfigError(f"{name} must be at least {low}{limit}, got {number}")
    return number


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrieveConfig:
    """Parameters of :func:`ragframe.retrieve`.

    Args:
        k: chunks kept per query, best first (>= 1).
        method: the retriever: ``bm25`` (Lucene 8's BM25, the default) or ``dense``
            (exact nearest neighbours of vectors); several (a list, or names joined
            by commas: ``bm25,dense``) fuse their results by reciprocal rank.
        k1: BM25's term-frequency saturation (Lucene's default 1.2; >= 0).
        b: BM25's length normalization (Lucene's default 0.75; 0 to 1).
        metric: dense similarity: ``cosine`` (of the normalized vectors), ``ip``
            (inner product) or ``l2`` (similarity is minus the squared distance).
        vectors: the chunks' vector column (dense; absent: the chunks' text is
            embedded with ``embed``).
        query_vectors: the queries' vector column (dense; absent: the queries' text is
            embedded with ``embed``).
        batch_size: texts per call of ``embed`` (>= 1).
        block_size: queries per block of the dense search: memory is about
            ``block_size`` x 32,768 scores, whatever the number of queries (>= 1).
        fusion: what reciprocal rank fusion ranks: ``chunk`` (each chunk by its ranks in
            the retrievers' lists) or ``document`` (each document once per list, at the
            rank of its best chunk there; the output has one row per document, its best
            ranked chunk).
        rrf_k: the constant of reciprocal rank fusion, ``1 / (rrf_k + rank)`` (>= 1).
        fusion_depth: how many results of each retriever are fused (at least ``k`` are).

    Raises:
        ConfigError: a value out of range or of the wrong kind; the message names it.

    Example:
        >>> RetrieveConfig(k=5, method=["bm25", "dense"]).method
        ('bm25', 'dense')
    """

    k: int = 10
    method: Method | tuple[Method, ...] | str = "bm25"
    k1: float = 1.2
    b: float = 0.75
    metric: Metric = "cosine"
    vectors: str = "vector"
    query_vectors: str = "vector"
    batch_size: int = 256
    block_size: int = 1024
    fusion: FusionLevel = "chunk"
    rrf_k: int = 60
    fusion_depth: int = 100

    def __post_init__(self) -> None:
        set_ints(self, {"k": 1, "batch_size": 1, "block_size": 1, "rrf_k": 1, "fusion_depth": 1})
        methods: Any = self.method
        if isinstance(methods, str):
            methods = tuple(part.strip() for part in methods.split(","))
        if not isinstance(methods, tuple | list) or not methods:
            raise ConfigError(
                f"method must be 'bm25', 'dense' or a list of them, got {self.method!r}"
            )
        for method in methods:
            _check_choice("method", method, get_args(Method))
        if len(set(methods)) != len(methods):
            raise ConfigError(f"method lists a retriever twice: {list(methods)}")
        object.__setattr__(self, "method", methods[0] if len(methods) == 1 else tuple(methods))
        object.__setattr__(self, "k1", _check_real("k1", self.k1, 0.0, None))
        object.__setattr__(self, "b", _check_real("b", self.b, 0.0, 1.0))
        _check_choice("metric", self.metric, get_args(Metric))
        _check_choice("fusion", self.fusion, get_args(FusionLevel))
        for name in ("vectors", "query_vectors"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"{name} must be a column name, got {getattr(self, name)!r}")

    @property
    def methods(self) -> tuple[Method, ...]:
        """The retrievers, in order."""
        return (self.method,) if isinstance(self.method, str) else self.method  # type: ignore[return-value]

    @property
    def depth(self) -> int:
        """Results taken from each retriever: ``k``, or ``max(k, fusion_depth)`` when
        several are fused."""
        return self.k if len(self.methods) == 1 else max(self.k, self.fusion_depth)


def resolve(
    config: RetrieveConfig | Mapping[str, Any] | None, options: Mapping[str, Any]
) -> RetrieveConfig:
    """The config ``config`` (None: the defaults; a mapping of fields) with ``options``
    (fields given as keywords) replacing its fields."""
    base = as_config(config, RetrieveConfig)
    if not options:
        return base
    names = {f.name for f in dataclasses.fields(RetrieveConfig)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise ConfigError(
            f"unknown retrieve option {unknown[0]!r}; expected one of {sorted(names)}"
        )
    return dataclasses.replace(base, **options)
