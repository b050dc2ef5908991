"""Errors raised by ragframe.

Every error is a :class:`RagframeError` (a ``ValueError``), so callers can catch one
class. Messages say what was wrong, what was received, what was expected and, where
possible, a hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RagframeError(ValueError):
    """Base class of every error ragframe raises on bad input or bad parameters."""


class ConfigError(RagframeError):
    """A configuration parameter is out of range or of the wrong kind."""


class SchemaError(RagframeError):
    """An input table lacks a required column or has a column of the wrong type."""


class DataError(RagframeError):
    """An input table has values ragframe cannot process (null ids, NaN scores, ...)."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest candidate, or ``""``."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
