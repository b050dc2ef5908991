"""What each column of :func:`ragframe.evaluate`'s output is: a metric, and which way
is better, or not a metric at all (``query_id``, ``n_relevant``, ``judged``, a sweep's
``config`` and parameters). A sweep ranks its configurations, picks the best and draws
its Pareto front by these directions, and refuses to rank by anything else.

Higher is better: the list metrics (``ndcg@k``, ``recall@k``, ``precision@k``,
``hit@k``, ``map``, ``mrr``), ``context_recall``, ``context_recall_capped``,
``context_ndcg``, ``relevant_share``, ``span_recall``, ``span_precision``. Lower is
better: what the context costs (``chars_used``, ``tokens_used``, ``blocks``,
``budget_share``) and what it wastes (``duplicate_chars``, ``unjudged_share``,
``truncated_blocks``), and how far the first relevant block is
(``first_relevant_rank``, ``first_relevant_offset``).
"""

from __future__ import annotations

from collections.abc import Collection

from ragframe import schema as c
from ragframe.errors import ConfigError

HIGHER = frozenset(
    {
        c.MAP,
        c.MRR,
        c.CONTEXT_RECALL,
        c.CONTEXT_RECALL_CAPPED,
        c.CONTEXT_NDCG,
        c.RELEVANT_SHARE,
        c.SPAN_RECALL,
        c.SPAN_PRECISION,
    }
)
LOWER = frozenset(
    {
        c.CHARS_USED,
        c.TOKENS_USED,
        c.BLOCKS,
        c.BUDGET_SHARE,
        c.DUPLICATE_CHARS,
        c.UNJUDGED_SHARE,
        c.TRUNCATED_BLOCKS,
        c.FIRST_RELEVANT_RANK,
        c.FIRST_RELEVANT_OFFSET,
    }
)
COSTS = frozenset({c.CHARS_USED, c.TOKENS_USED, c.BLOCKS, c.BUDGET_SHARE})
"""What a Pareto front may weigh a metric against: what the context costs."""


def higher_is_better(name: str) -> bool | None:
    """Whether a higher ``name`` is better (True), a lower (False), or ``name`` is not a
    metric (None)."""
    if name in HIGHER:
        return True
    if name in LOWER:
        return False
    metric, at, k = name.partition("@")
    if at and metric in c.AT_K and k.isdigit() and int(k) >= 1:
        return True
    return None


def check_metric(name: object, have: Collection[str], what: str) -> str:
    """``name`` when it is a metric among ``have``, else a :class:`ConfigError` saying
    what it is instead (``what``: the argument, e.g. ``sweep: metric``)."""
    if not isinstance(name, str):
        raise ConfigError(f"{what} must be a metric's name (a string), got {name!r}")
    metrics = sorted(n for n in have if higher_is_better(n) is not None)
    if higher_is_better(name) is None:
        kind = "a column, not a metric" if name in have else "not a metric"
        raise ConfigError(f"{what}: {name!r} is {kind}; expected one of {metrics}")
    if name not in have:
        raise ConfigError(f"{what}: no metric {name!r} here; have {metrics}")
    return name


def check_cost(name: object, have: Collection[str], what: str) -> str:
    """``name`` when it is a cost (:data:`COSTS`) among ``have``, else a ConfigError."""
    found = check_metric(name, have, what)
    if found not in COSTS:
        raise ConfigError(f"{what}: {found!r} is not a cost; expected one of {sorted(COSTS)}")
    return found
