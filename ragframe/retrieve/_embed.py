"""An ``embed`` function from a sentence-transformers model folder on disk (optional:
``pip install 'ragframe[sentence-transformers]'``). Never a download: the path must be
a folder holding the model, and the library is told to stay offline."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragframe.errors import ConfigError

F32 = npt.NDArray[np.float32]


def sentence_transformer(
    path: str | os.PathLike[str], *, device: str | None = None, normalize: bool = False
) -> Callable[[list[str]], F32]:
    """An ``embed`` for :func:`ragframe.retrieve`: the sentence-transformers model saved
    in the folder ``path`` (``SentenceTransformer.save`` or a copy of a model's files),
    loaded once, offline.

    Args:
        path: the model folder.
        device: where it runs (``cpu``, ``cuda``; None: the library's choice).
        normalize: give unit-length vectors.

    Raises:
        ConfigError: sentence-transformers is not installed, or ``path`` is not a
            folder holding a model (nothing is ever downloaded).

    Example:
        >>> sentence_transformer("no/such/folder")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ragframe.errors.ConfigError: no/such/folder is not a folder holding a ...
    """
    folder = Path(path)
    if not folder.is_dir() or not any(
        (folder / name).exists() for name in ("modules.json", "config.json")
    ):
        raise ConfigError(
            f"{os.fspath(path)} is not a folder holding a sentence-transformers model "
            "(nothing is downloaded); expected the folder SentenceTransformer.save wrote"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError(
            "sentence_transformer needs the sentence-transformers package: "
            "pip install 'ragframe[sentence-transformers]'"
        ) from exc
    model: Any = SentenceTransformer(str(folder), device=device, local_files_only=True)

    def embed(texts: list[str]) -> F32:
        out = model.encode(
            texts, convert_to_numpy=True, normalize_embeddings=normalize, show_progress_bar=False
        )
        return np.asarray(out, dtype=np.float32)

    return embed
