"""The compiled kernels of ``postprocess``, one file per family (numba).

Why kernels: the distinct top-K walk and the block merge test text against text
(word-bounded containment of normalized chunks; "the largest L such that the last L
normalized characters of one text equal the first L of another"), which no Polars
expression does, and the merge is a running sum with resets (the block size cap) whose
increments depend on the block text built so far. Each kernel is one linear pass over
whole columns' Arrow buffers (UTF-8 bytes read in place) for every query at once,
compiled to machine code; nothing runs per row in Python. Normalized text is never
materialized: the kernels normalize the few texts a test needs into small scratch
buffers.

============  ==========================================================================
file          family
============  ==========================================================================
_text         UTF-8: code points, Java whitespace, rule 7's normalization on the fly
_contains     rule 3's word-bounded containment
_walk         rule 3's distinct top-K walk (its entity keys: _keys)
_heads        each query's head in one pass (ids in order, scores presorted)
_overlap      rule 7's ``remove_overlap`` (overlap length, the seed's position walk)
_merge        rules 6-8: the block merge and block statistics (its cap in characters or
              in tokens); rule 10's cut; the kept blocks' texts written
_bpe          ``cl100k_base`` token counts: tiktoken's pre-tokenizer (ASCII text) and
              byte-pair merge; rule 10's truncation in tokens
_order        a stable sort within each query (rules 2, 5 and 9), the counting sort by
              query, each query's head
_store        each candidate's chunk-store row (by entity, or a hash table)
============  ==========================================================================

How they compile, where they are cached, reading Arrow bytes in place and running on
all CPUs: :mod:`ragframe._kernels` (shared with the other stages' kernels). Kernel files
import nothing from ragframe outside the shared family's folders
(:mod:`ragframe._kernels._own`) except :mod:`ragframe._arrow` (read at run time, never
compiled): everything compiled is in the files the cache key hashes, so it sees every
change.

Below, the order a call runs its kernels in, for a first run's second process
(:mod:`ragframe._kernels._ahead`).
"""

from __future__ import annotations

from ragframe._kernels import _ahead

RUN_ORDER = {
    "_dense_probe": f"{__name__}._store",
    "_table": f"{__name__}._store",
    "_probe": f"{__name__}._store",
    "_sorted_heads": f"{__name__}._heads",
    "_grouped_by": f"{__name__}._order",
    "_places": f"{__name__}._order",
    "_row_views": "ragframe._kernels._buffers",
    "_walk": f"{__name__}._walk",
    "_in_segments_of": f"{__name__}._order",
    "_merge": f"{__name__}._merge",
    "_ranked_in_segments": f"{__name__}._order",
    "_runs_of": f"{__name__}._pieces",
}
"""The kernels one postprocess call may run, in the order it first calls them, and the
kernel file of each (the store lookup's: by entity for a store laid out as chunkers
write it, else a hash table; the counting sort only for input not grouped by query).
Rule 10's cut (``_truncations``, only for a first block over the budget) and the
writer of blocks the merge did not write (``_write``: a budget that drops most of the
text, or a merge in tokens) are left to the calls that need them: the second process
compiles the last kernels first."""
ONLY_SOME_CALLS = frozenset(
    {"_dense_probe", "_table", "_probe", "_sorted_heads", "_grouped_by", "_places"}
)
"""Kernels of :data:`RUN_ORDER` a call runs only for some inputs (a store laid out as
chunkers write it or not; each query's head in one pass for integer query ids in order
with scores presorted, else the ranking's places; input not grouped by query): the
second process leaves them
to the call that needs them (measured: compiling all three lookups and the counting
sort for a call that needs one took 24-26 s of CPU in all, against 13-14 s in one
process, and made the first run slower)."""
SAMPLE_NEEDS = {"_write": "_merge"}
"""A kernel whose sample runs another kernel first (``_write`` writes the blocks that
``_merge`` finds): the second process compiles that one first, under its own name
(where both are in :data:`RUN_ORDER`)."""

_ahead.plan(__name__, RUN_ORDER, ONLY_SOME_CALLS, SAMPLE_NEEDS)
