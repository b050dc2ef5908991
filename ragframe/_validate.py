"""Parameter checks shared by every stage's frozen config, configs given as mappings,
and the whole-column value checks of input tables (:func:`checked`).

The seeds silently clamp out-of-range values; ragframe rejects them with a
:class:`~ragframe.errors.ConfigError` that names the parameter, the value and the
allowed range. Integers (numpy's too, never a bool) are bounded by :data:`MAX_COUNT`, so
a huge value fails here, with its range, not as an overflow deep inside a plan.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from typing import TypeVar

import numpy as np
import polars as pl

from ragframe.errors import ConfigError, DataError, did_you_mean

MAX_COUNT = 2**62
"""The largest count, size or character limit any parameter takes: far beyond any real
input, and small enough that sums and offsets built from it stay inside Int64."""

C = TypeVar("C")


def shown(value: object) -> str:
    """``value`` as a message shows it (numpy scalars as the plain Python value)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def check_int(name: str, value: object, low: int, high: int = MAX_COUNT) -> int:
    """``value`` as an ``int``; raise unless it is an integer (Python or numpy, not a
    bool) with ``low <= value <= high``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be an integer in [{low}, {high}], got {shown(value)}")
    number = int(value)
    if not low <= number <= high:
        raise ConfigError(f"{name} must be in [{low}, {high}], got {number}")
    return number


def check_unit_float(name: str, value: object) -> float:
    """``value`` as a ``float``; raise unless it is a real number (Python or numpy, not a
    bool) in [0, 1]."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name} must be a number in [0, 1], got {shown(value)}")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ConfigError(f"{name} must be in [0, 1], got {number}")
    return number


def set_ints(config: object, lows: Mapping[str, int]) -> None:
    """Check each integer field of a frozen ``config`` (name -> lowest value) with
    :func:`check_int` and store it back as a plain ``int``."""
    for name, low in lows.items():
        object.__setattr__(config, name, check_int(name, getattr(config, name), low))


def set_unit_float(config: object, name: str) -> None:
    """Check a [0, 1] field of a frozen ``config``; store it back as a plain ``float``."""
    object.__setattr__(config, name, check_unit_float(name, getattr(config, name)))


def as_config(value: object, cls: type[C]) -> C:
    """The config ``value`` stands for: ``cls()`` for None, ``value`` itself when it is a
    ``cls`` (a subclass too), else ``cls(**value)`` for a mapping of its fields.

    Raises:
        ConfigError: an unknown or missing field, or not a config at all.
    """
    if value is None:
        value = {}
    if isinstance(value, cls):
        return value
    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"config must be a {cls.__name__} or a mapping of its fields, "
            f"got {type(value).__name__}"
        )
    for key in value:
        if key not in fields:
            hint = did_you_mean(key, fields) if isinstance(key, str) else ""
            raise ConfigError(f"{cls.__name__} has no field {key!r}; fields: {fields}{hint}")
    required = [
        f.name
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in value]
    if missing:
        raise ConfigError(f"{cls.__name__} needs {missing}; got fields {list(value)}")
    return cls(**value)


# --- input values, checked inside a plan ------------------------------------------------


def plural(count: int, word: str) -> str:
    """``"1 row"``, ``"2 rows"``, ``"2 queries"``."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word[:-1]}ies" if word.endswith("y") else f"{count} {word}s"


def _value_problem(
    values: pl.Series, cast: pl.Series, present: bool, hint: str
) -> tuple[pl.Series, str, str]:
    """The rows that fail, what is wrong with them and what was expected (the first
    failing check wins)."""
    if present and values.null_count():
        return values.is_null(), "null values", f"a value on every row{hint}"
    if values.dtype.is_float():
        bad = (values.is_nan() | values.is_infinite()).fill_null(False)
        if bad.any():
            return bad, "NaN or infinite values", f"finite numbers{hint}"
    lost = cast.is_null() & values.is_not_null()
    return (
        lost,
        f"values outside the range of {cast.dtype}",
        f"integers in [{-(2**63)}, {2**63 - 1}] (hint: cast larger ids to strings)",
    )


def _clean(values: pl.Series, cast: pl.Series, present: bool) -> bool:
    """Whether ``values`` pass every test of :func:`_value_problem`, told without a mask
    where it can be: null counts (kept by the column) say whether there are nulls and
    whether the cast lost a value (it can only add nulls), and a float column whose sum
    is finite holds no NaN or infinity (a sum that overflows goes to the full test)."""
    nulls = values.null_count()
    if (present and nulls) or cast.null_count() != nulls:
        return False
    if values.dtype.is_float():
        total = values.sum()
        return total is None or math.isfinite(total)
    return True


def first_row(mask: pl.Series) -> int | None:
    """The first row where ``mask`` is true, or None where it is true nowhere."""
    return int(mask.arg_true()[0]) if mask.any() else None


def _offenders(bad: pl.Series, values: pl.Series, keys: pl.Series | None) -> str:
    """``"on 3 rows in 2 queries; first: row 4 (query_id 'q'): nan"``, vectorized."""
    rows = int(bad.sum())
    first = int(bad.arg_true()[0])
    where = f"on {plural(rows, 'row')}"
    at = f"row {first}"
    if keys is not None:
        where += f" in {plural(keys.filter(bad).n_unique(), 'query')}"
        at += f" ({keys.name} {keys[first]!r})"
    value = values[first]
    return f"{where}; first: {at}" + ("" if value is None else f": {value!r}")


def checked(
    name: str,
    dtype: pl.DataType | type[pl.DataType],
    what: str,
    *,
    shown: str | None = None,
    key: tuple[str, str] | None = None,
    present: bool = False,
    hint: str = "",
    given: pl.Series | None = None,
) -> pl.Expr:
    """Column ``name`` cast to ``dtype``, checked over the whole column when collected.

    Raises :class:`~ragframe.errors.DataError` on null values (when ``present``), NaN or
    infinite floats, and values the cast cannot hold (UInt64 ids >= 2**63 as Int64);
    the message names the column as the user does (``shown``), how many rows (and, with
    ``key`` = (column, its name for the user), queries) fail, the first of them and
    what was expected (``hint`` follows the expectation for nulls and NaN).
    Whole-column (not elementwise): the counts and the first row are the input's.
    ``given``: the column's values where the input is in memory; when they pass, the
    plan only casts (nothing can fail there: no check in the plan).
    """
    if given is not None and _clean(given, given.cast(dtype, strict=False), present):
        return pl.col(name).cast(dtype, strict=False)
    label = shown or name

    def check(column: pl.Series) -> pl.Series:
        values = column.struct.field(name) if key else column
        cast = values.cast(dtype, strict=False)
        if _clean(values, cast, present):  # the usual case: no mask built
            return cast
        bad, problem, expected = _value_problem(values, cast, present, hint)
        if not bad.any():
            return cast
        keys = column.struct.field(key[0]).alias(key[1]) if key else None
        found = _offenders(bad, values, keys)
        raise DataError(f"{what}: column '{label}' has {problem} {found}; expected {expected}")

    source = pl.struct(key[0], name) if key else pl.col(name)
    return source.map_batches(check, return_dtype=dtype).alias(name)
