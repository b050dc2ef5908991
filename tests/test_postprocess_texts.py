"""Reading the candidates' texts in place from their text source
(``ragframe.postprocess._texts``)."""

from __future__ import annotations

import ctypes

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._kernels._buffers import row_views
from ragframe.postprocess import _texts


def test_source_texts_takes_views_read_already_as_they_are() -> None:
    """Views the caller read (the walk's) are used as given; without them the same
    views are read from the source."""
    source = pl.DataFrame({c.TEXT: ["short", None, "a text longer than twelve bytes", "é"]})
    rows = pl.DataFrame({c.T_ROW: [2, -1, 0, 3, 1]})
    views = row_views(source[c.TEXT], rows[c.T_ROW].to_numpy())
    given = _texts.source_texts(rows, source, views=views)
    read = _texts.source_texts(rows, source)
    assert given.address is views[0] and given.length is views[1]
    assert np.array_equal(read.length, given.length)
    texts = [
        ctypes.string_at(int(a), int(n)).decode()
        for a, n in zip(read.address, read.length, strict=True)
    ]
    assert texts == ["a text longer than twelve bytes", "", "short", "é", ""]
