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
_compile      the decorators: functions compiled at a kernel's first call, one signature
_jit          numba itself (imported then): options, the on-disk cache (keyed on these
              sources), the compile notice
_own         kernel files elsewhere kept in the same per-user cache folder
_ahead        a first run: the later kernels compiled in a second process meanwhile
_preload      a warm run: the kernels loaded on a thread while the input is read
_buffers      reading Arrow bytes in place: pointers, a row's bytes, prefetching
_text         UTF-8: code points, Java whitespace, rule 7's normalization on the fly
_contains     rule 3's word-bounded containment
_walk         rule 3's distinct top-K walk
_overlap      rule 7's ``remove_overlap`` (overlap length, the seed's position walk)
_merge        rules 6-8: the block merge and block statistics (its cap in characters or
              in tokens); rule 10's cut; the kept blocks' texts written
_bpe          ``cl100k_base`` token counts: tiktoken's pre-tokenizer (ASCII text) and
              byte-pair merge; rule 10's truncation in tokens
_order        a stable sort within each query (rules 2, 5 and 9), the counting sort by
              query, each query's head
_store        each candidate's chunk-store row (by entity, or a hash table)
_parts        running a kernel on all CPUs, parts of whole queries or groups
============  ==========================================================================

Kernel files import nothing from ragframe outside this package except
:mod:`ragframe._arrow` (read at run time, never compiled): everything compiled is in
these files, so the cache key, a hash of them, sees every change. Importing them imports
no numba (:mod:`._compile`): a command that runs no kernel never loads it.
"""
