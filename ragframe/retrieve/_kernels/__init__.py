"""The compiled kernels of ``retrieve``, one file per family (numba).

=========  ===============================================================================
file       family
=========  ===============================================================================
_vocab     term ids: one hash table of the terms' bytes, grown block by block
_postings  each chunk's (term, frequency) pairs; the postings, by a counting sort
_search    BM25 top k of every query (Lucene 8's float32 scoring, max-score pruning)
=========  ===============================================================================

Each file compiles only its own code (numba's ``cache=True``, kept in ragframe's
per-user cache folder and keyed on that file alone: ``keep_in_user_cache``), so a file
imports nothing it compiles from elsewhere.
"""
