"""fetch: the LLM content of every (query, document) request at once (SPEC section 2,
seed Fess ``DefaultChatContentFetcher``), one lazy Polars plan.

Small documents go to the LLM whole; large ones as their query-relevant passages; a
large one without any passage as its first ``fulltext_threshold`` characters.

Where each rule of SPEC section 2 lives:

==================================  =====================================================
Parameters                          :mod:`._config` (:class:`FetchConfig` extends
                                    :class:`HighlightConfig`: each field written once)
1-6. strategy, content, order,      :mod:`._strategy` (:func:`fetch`,
     every request accounted for    :func:`missing_documents`)
2.1 passages, per pair              :mod:`._highlight` (:func:`highlight`, the plan)
    query terms, blank queries,     :mod:`._analysis` (token rules, sentence ends,
    "..." joining                   the ellipsis)
    document tokens                 :mod:`._tokenize` (numpy kernel over the content
                                    buffer; byte classes :mod:`._classes`), matches
                                    :mod:`._terms` (ASCII-only documents: one compiled
                                    pass, :mod:`._ascii`)
    shared passage steps            :mod:`._passages` (needed documents, pair terms,
                                    matches, best passages, joining)
    FastVectorHighlighter           :mod:`._fvh` (fragment lists),
                                    :mod:`._boundary` (the boundary scanner)
    unified (opt-in)                :mod:`._unified` (sentences, BM25)
==================================  =====================================================
"""

from __future__ import annotations

from ragframe.fetch._config import (
    FetchConfig,
    FragmentScoring,
    HighlightConfig,
    HighlighterMode,
    HighlightOrder,
)
from ragframe.fetch._highlight import highlight
from ragframe.fetch._strategy import Strategy, fetch, missing_documents

__all__ = [
    "FetchConfig",
    "FragmentScoring",
    "HighlightConfig",
    "HighlightOrder",
    "HighlighterMode",
    "Strategy",
    "fetch",
    "highlight",
    "missing_documents",
]
