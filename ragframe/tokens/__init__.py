"""Tokenizers and token counting, for token budgets (SPEC 1, "Budgets in tokens") and
whoever else counts tokens.

==============  ========================================================================
module          what
==============  ========================================================================
_counters       the tokenizer protocol (:class:`TokenCounter`), the adapters for
                tiktoken, Hugging Face ``tokenizers`` and callables
                (:func:`token_counter`), batch counting (:func:`count_texts`)
_bpe            ``cl100k_base`` counted in compiled code, exactly as tiktoken counts
                (used by the tiktoken adapter where the encoding is one it reproduces)
_kernels/       the counting kernels (numba; see its docstring)
==============  ========================================================================
"""

from __future__ import annotations

from ragframe.tokens._counters import (
    SPEC_FORMS,
    TiktokenCounter,
    TokenCounter,
    count_texts,
    token_counter,
)

__all__ = ["SPEC_FORMS", "TiktokenCounter", "TokenCounter", "count_texts", "token_counter"]
