"""Ids as written (SPEC 4): what id columns may be, how judgements meet a run whose
ids are of the other kind, and ids read as integers when the user asks.

Ids are integers or strings, kept as the input has them: a file's text ids stay
strings (``0123`` is not ``123``). Judgements and a run (or blocks) with ids of one
kind are matched as they are. When one side has integer ids and the other strings,
the strings are read as the integers they write, and only where that is unambiguous:
every string id must write an integer in plain decimal (``"123"``, ``"-4"``), else it
is an error naming the first one that does not (``"0123"`` or ``"+5"`` may or may not
mean 123; ``"d1"`` can never match an integer). So an integer id matches exactly the
string that writes it, and never silently nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Literal

import polars as pl

from ragframe._validate import first_row, plural
from ragframe.errors import DataError, SchemaError

IdMode = Literal["as_written", "integers"]
"""How :func:`ragframe.read_qrels` and :func:`ragframe.read_run` read string ids: as
written (the default) or parsed as integers (``"0123"`` is then 123)."""
PLAIN = r"^(0|-?[1-9][0-9]{0,18})$"
"""An integer in plain decimal: no sign but ``-``, no leading zero, at most 19 digits."""
HINT = (
    "hint: give both the same id type, or read the judgements with ids='integers' "
    "to parse them as integers"
)


def check_kind(schema: Mapping[str, pl.DataType], name: str, what: str) -> None:
    """Raise :class:`SchemaError` unless column ``name`` holds integers or strings (or
    only nulls)."""
    dtype = schema[name]
    if dtype.is_integer() or dtype in (pl.String, pl.Null):
        return
    raise SchemaError(f"{what}: column '{name}' has type {dtype}; expected integer or string ids")


def target(dtypes: Iterable[pl.DataType]) -> pl.DataType:
    """The one type ids of ``dtypes`` meet as: strings when none is an integer type,
    else the integer type they share (Int64 when they differ)."""
    ints = [d for d in dtypes if d.is_integer()]
    if not ints:
        return pl.String()
    return ints[0] if all(d == ints[0] for d in ints) else pl.Int64()


def _problem(values: pl.Series) -> pl.Series:
    """Where a string id does not write an integer in plain decimal (nulls pass)."""
    return ~values.str.contains(PLAIN).fill_null(True)


def _fail(values: pl.Series, bad: pl.Series, what: str, name: str, other: str) -> DataError:
    first = int(bad.arg_true()[0])
    rows = plural(int(bad.sum()), "row")
    return DataError(
        f"{what}: column '{name}' has ids that do not write an integer in plain decimal "
        f"on {rows}; first: row {first}: {values[first]!r}; {other} has integer ids, "
        f"which match a string only where it writes the integer (123 matches '123', "
        f"never '0123' or 'd1') ({HINT})"
    )


def to_integers(
    values: pl.Series, dtype: pl.DataType, what: str, other: str, name: str | None = None
) -> pl.Series:
    """String ids as integers of ``dtype`` where each writes one in plain decimal, else
    a :class:`DataError` naming the first that does not (``other``: whose integer ids
    they must meet)."""
    label = name or values.name
    bad = _problem(values)
    if bad.any():
        raise _fail(values, bad, what, label, other)
    return _held(values, values.cast(pl.Int64, strict=False), dtype, what, other, label)


def _held(
    values: pl.Series, number: pl.Series, dtype: pl.DataType, what: str, other: str, label: str
) -> pl.Series:
    """``number`` (``values`` as integers) cast to ``dtype``, or a :class:`DataError`
    naming the first id that type cannot hold."""
    cast = number.cast(dtype, strict=False)
    _all_kept(
        values,
        cast,
        lambda first, _: (
            f"{what}: column '{label}' has an id outside the range of {dtype}: "
            f"row {first}: {values[first]!r}; {other} has ids of type {dtype}"
        ),
    )
    return cast


def _all_kept(values: pl.Series, converted: pl.Series, message: Callable[[int, int], str]) -> None:
    """Raise a :class:`DataError` where ``converted`` (``values`` cast or parsed) lost a
    value, null where ``values`` is not: ``message(first row, rows lost)``."""
    lost = converted.is_null() & values.is_not_null()
    if (first := first_row(lost)) is not None:
        raise DataError(message(first, int(lost.sum())))


def met(values: pl.Series, dtype: pl.DataType, what: str, other: str) -> pl.Series:
    """``values`` (ids of one input, eager) as ids of ``dtype`` (:func:`target`)."""
    if values.dtype == dtype or values.dtype == pl.Null:
        return values.cast(dtype)
    if values.dtype == pl.String:
        return to_integers(values, dtype, what, other)
    return _held(values, values, dtype, what, other, values.name)


def meeting(name: str, dtype: pl.DataType, have: pl.DataType, what: str, other: str) -> pl.Expr:
    """Column ``name`` (ids of type ``have``, in a lazy plan) as ids of ``dtype``,
    checked over the whole column when collected (as :func:`met`)."""
    if have == dtype:
        return pl.col(name)
    return pl.col(name).map_batches(
        lambda values: met(values, dtype, what, other), return_dtype=dtype
    )


def parsed(values: pl.Series, what: str, where: Callable[[int], str]) -> pl.Series:
    """String ids parsed as integers (``ids="integers"``: leading zeros allowed), or a
    :class:`DataError` naming the first that is no integer (``where``: a row's place,
    as the message shows it)."""
    if values.dtype != pl.String:
        return values
    number = values.str.strip_chars(" ").cast(pl.Int64, strict=False)
    _all_kept(
        values,
        number,
        lambda first, lost: (
            f"{what}: {where(first)}: {values.name} {values[first]!r} is not "
            f"an integer ({plural(lost, 'such id')}); expected integers, as ids='integers' asks"
        ),
    )
    return number
