"""reference: the plain per-query (and per-pair) oracles the engine is tested against.

They walk one query, or one (query, document) pair, at a time, exactly as the seeds do,
and favour obviousness over speed. They import nothing from the engine: every rule and
constant is written here from SPEC (a test walks the imports to keep it so). Configs
are read by attribute, so the engine's configs can be passed as they are.

=========================  =================================================
:mod:`.postprocess`        SPEC 1 (:func:`postprocess_reference`)
:mod:`._text`              SPEC 1 rules 7 and 10: normalization, overlap, cut
:mod:`.fetch`              SPEC 2 and 2.1 (:func:`reference_fetch`,
                           :func:`reference_highlight`)
:mod:`._analysis`          SPEC 2.1 token, blank and sentence rules
:mod:`.retrieve`           SPEC 6, BM25 (:func:`retrieve_reference`)
=========================  =================================================
"""

from __future__ import annotations

from ragframe.reference.fetch import reference_fetch, reference_highlight
from ragframe.reference.postprocess import postprocess_reference
from ragframe.reference.retrieve import retrieve_reference

__all__ = ["postprocess_reference", "reference_fetch", "reference_highlight", "retrieve_reference"]
