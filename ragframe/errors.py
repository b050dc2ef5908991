"""Errors raised by ragframe.

Every error is a :class:`RagframeError` (a ``ValueError``), so callers can catch one
class. Messages say what was wrong, what was received, what was expected and, where
possible, a hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

_POLARS_CONTEXT = "\n\n"
"""Polars re-raises an error from inside a plan with its plan context appended after a
blank line ("This error occurred in the following expression: ..."); ragframe's own
messages are one line, so everything from the first blank line on is dropped."""


class RagframeError(ValueError):
    """Base class of every error ragframe raises on bad input or bad parameters.

    The message is one line: an error raised inside a lazy plan keeps its class and its
    message when collected, without the plan context Polars appends.
    """

    def __init__(self, message: object = "", *args: object) -> None:
        if isinstance(message, str):
            message = message.split(_POLARS_CONTEXT, 1)[0]
        super().__init__(message, *args)


class ConfigError(RagframeError):
    """A configuration parameter is out of range or of the wrong kind."""


class SchemaError(RagframeError):
    """An input table lacks a required column or has a column of the wrong type."""


class DataError(RagframeError):
    """An input table has values ragframe cannot process (null ids, NaN scores, ...)."""


def _folded(name: str) -> str:
    """``name`` lower-cased without separators: ``"Doc-ID"`` -> ``"docid"``."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def did_you_mean(
    name: str,
    candidates: Iterable[str],
    synonyms: Iterable[str] = (),
    *,
    taken: Collection[str] = (),
) -> str:
    """Return ``"; did you mean 'x'?"`` for the candidate most likely meant by ``name``,
    or ``""``.

    A candidate equal to ``name`` or to one of its ``synonyms`` up to case and
    separators (``score`` for ``similarity``, ``DocID`` for ``doc_id``) wins, the
    synonyms in their order; else the closest spelling (:mod:`difflib`) that is not
    ``taken`` (names that mean something else, such as ``query`` for ``query_id``).
    """
    found = list(candidates)
    by_fold: dict[str, str] = {}
    for candidate in found:
        by_fold.setdefault(_folded(candidate), candidate)
    for word in (name, *synonyms):
        if _folded(word) in by_fold:
            return f"; did you mean '{by_fold[_folded(word)]}'?"
    spare = [candidate for candidate in found if candidate not in taken]
    close = difflib.get_close_matches(name, spare, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
