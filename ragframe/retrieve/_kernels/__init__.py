"""The compiled kernels of ``retrieve``, one file per family (numba).

=========  ===============================================================================
file       family
=========  ===============================================================================
_vocab     term ids: one hash table of the terms' bytes, grown block by block
_postings  each chunk's (term, frequency) pairs; the postings, by a counting sort
_search    BM25 top k of every query (Lucene 8's float32 scoring, max-score pruning)
_topk      dense top k of every query, merged block by block
_heap      the bounded heap of a query's best chunks both top-k kernels keep
=========  ===============================================================================

The files compile only this folder's code (numba's ``cache=True``, kept in ragframe's
per-user cache folder and keyed on all of this folder's files:
``keep_folder_in_user_cache``), so a file imports nothing it compiles from elsewhere
(a test checks it), and an edit of one file (the heap's) compiles its callers afresh.
"""
