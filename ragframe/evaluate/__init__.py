"""evaluate: measure the context that reaches the LLM against relevance judgements
(SPEC section 4), for every query at once, as Polars plans.

Where each part of SPEC section 4 lives:

===========================  ============================================================
qrels (frames, TREC, BEIR),  :mod:`._qrels` (:func:`read_qrels`)
grades to gains
runs: document ranking,      :mod:`._runs` (:func:`document_ranking`, :func:`read_run`,
TREC run files                :func:`write_run`)
list metrics                 :mod:`._lists` (nDCG@k, recall@k, P@k, hit@k, MAP, MRR)
context metrics              :mod:`._context` (recall, nDCG, characters, shares,
                             duplicates, first relevant block)
every query accounted for,   :mod:`._evaluate` (:func:`evaluate`, :func:`summarize`)
means over judged queries
===========================  ============================================================
"""

from __future__ import annotations

from ragframe.evaluate._evaluate import evaluate, summarize
from ragframe.evaluate._qrels import read_qrels
from ragframe.evaluate._runs import document_ranking, read_run, write_run

__all__ = ["document_ranking", "evaluate", "read_qrels", "read_run", "summarize", "write_run"]
