"""The reference's token budgets (SPEC 1, "Budgets in tokens"), in plain Python: one
text counted at a time, through the config's tokenizer (any object with
``count(texts) -> counts``; the reference calls it with one text, or a tiktoken
encoding's ``encode_ordinary`` itself).

With ``length="tokens"``, rule 6's cap is ``max_block_tokens`` on the merged text's own
count, and rule 10's budget is ``max_tokens`` on the sum of the blocks' counts. A first
block over the budget keeps its longest prefix within it, found by bisection over the
prefix length (``lo = 0``, ``hi = len(text)``; while ``hi - lo > 1``: the middle
prefix fits -> ``lo``, else ``hi``), then rule 10's whitespace cut on that prefix
(its length plays the seed's ``r``) and the Java trim. Where that text still counts
more than the budget (the trim of a leading space can re-tokenize the first word), the
longest length in ``[0, L]`` whose cut and trimmed text fits, by the same bisection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from ragframe.reference._text import truncate


class _HasText(Protocol):
    text: str


B = TypeVar("B", bound=_HasText)


def tokens(config: Any, text: str) -> int:
    """The token count of ``text`` by the config's tokenizer; for a tiktoken encoding
    (a counter with an ``encoding`` that has ``encode_ordinary``), tiktoken's own
    count, never the engine's compiled counter."""
    encoding = getattr(config.tokenizer, "encoding", None)
    if encoding is not None and hasattr(encoding, "encode_ordinary"):
        return len(encoding.encode_ordinary(text))
    return int(config.tokenizer.count([text])[0])


def in_tokens(config: Any) -> bool:
    """Whether the config counts its budgets in tokens."""
    return getattr(config, "length", "chars") == "tokens"


def block_fits(config: Any, text: str) -> bool:
    """Rule 6's cap on the text a merge would give: its characters, or its tokens."""
    if in_tokens(config):
        return tokens(config, text) <= int(config.max_block_tokens)
    return len(text) <= int(config.max_merged_block_characters)


def _bisect(config: Any, text: str, hi: int, limit: int, cut: bool) -> int:
    """The largest ``lo < hi`` at which the prefix (``cut``: the cut and trimmed text)
    counts at most ``limit``, by bisection; ``hi``'s text counts more."""
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        probe = truncate(text, mid) if cut else text[:mid]
        if tokens(config, probe) <= limit:
            lo = mid
        else:
            hi = mid
    return lo


def truncate_tokens(config: Any, text: str, limit: int) -> str:
    """The longest prefix within ``limit`` tokens, then rule 10's cut; within the
    budget even where the trim re-tokenizes (module docstring)."""
    longest = _bisect(config, text, len(text), limit, cut=False)
    out = truncate(text, longest)
    if tokens(config, out) > limit:
        out = truncate(text, _bisect(config, text, longest, limit, cut=True))
    return out


def budget_tokens(blocks: Sequence[B], config: Any) -> list[tuple[B, str, bool]]:
    """Rule 10 with the budget in tokens: blocks in order up to ``max_blocks``; the
    first one alone truncated when it is over ``max_tokens``; stop at the first that
    does not fit."""
    out: list[tuple[B, str, bool]] = []
    total = 0
    for block in blocks:
        if len(out) >= config.max_blocks:
            break
        count = tokens(config, block.text)
        if total + count > config.max_tokens:
            if not out and config.max_tokens - total > 0:
                out.append((block, truncate_tokens(config, block.text, config.max_tokens), True))
            break
        out.append((block, block.text, False))
        total += count
    return out
