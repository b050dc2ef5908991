"""The compiled kernels of ``tokens`` (numba): ``cl100k_base`` token counts in place.

========  ==============================================================================
file      family
========  ==============================================================================
_bpe      tiktoken's pre-tokenizer (ASCII text) and byte-pair merge; the vocabulary's
          hash table
_count    whole texts counted (a text's pieces in one loop, incrementally for the merge
          of ``postprocess``), the counts of short pieces remembered
========  ==============================================================================

Compiled and cached with the shared family (:mod:`ragframe._kernels._own`): ``postprocess``'s
token-capped merge calls these kernels' helpers, so the files compile together and one
cache key hashes them all.
"""
