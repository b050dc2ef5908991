"""Finding the first bad line of a CSV or JSON-lines file Polars could not read.

Used only on the error path (see :func:`ragframe.io.explain_read_error`): each check
streams the file once, line by line, and returns a message such as ``line 7: invalid
UTF-8 ...`` or ``None`` when it finds nothing wrong.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path

_UNPARSED = re.compile(
    r"could not parse `(?P<value>.*?)` as dtype `(?P<dtype>[^`]+)` at column '(?P<column>[^']*)'"
)
_ENCODING_HINT = "the file must be UTF-8; re-encode it first, e.g. iconv -f latin1 -t utf-8"


def utf8_problem(path: Path) -> str | None:
    """``line N: invalid UTF-8 ...`` for the first undecodable line, else ``None``.

    A UTF-8 sequence never contains a newline byte, so decoding line by line is exact.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start]
                return (
                    f"line {number}: invalid UTF-8 (byte 0x{byte:02x} at byte {exc.start + 1} "
                    f"of the line); {_ENCODING_HINT}"
                )
    return None


def _records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """The CSV records of ``path`` with the line each ends on, blank lines skipped."""
    limit = csv.field_size_limit(2**31 - 1)  # the text of a huge document is one field
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            for record in reader:
                if record:
                    yield reader.line_num, record
    finally:
        csv.field_size_limit(limit)


def _duplicates(header: list[str]) -> str | None:
    seen: dict[str, list[int]] = {}
    for number, name in enumerate(header, 1):
        seen.setdefault(name, []).append(number)
    repeated = {name: places for name, places in seen.items() if len(places) > 1}
    if not repeated:
        return None
    listed = ", ".join(
        f"{name!r} (columns {', '.join(map(str, p))})" for name, p in repeated.items()
    )
    return f"line 1: duplicate column names in the header: {listed}; expected each name once"


def csv_problem(path: Path, error: str = "") -> str | None:
    """The first problem of the CSV file ``path``: bad UTF-8, a header that repeats a
    name, a record with another number of fields than the header (Polars would fill
    or drop fields silently), or the value Polars named in ``error`` as unparseable;
    ``None`` when there is none. One streaming pass (about 70 MB/s)."""
    unparsed = _UNPARSED.search(error)
    header: list[str] | None = None
    line = 0
    try:
        for line, record in _records(path):
            if header is None:
                header = record
                found = _duplicates(header)
                if found:
                    return found
                continue
            if len(record) != len(header):
                fields = f"{len(record)} field" + ("" if len(record) == 1 else "s")
                return f"line {line}: {fields}, expected {len(header)} (as many as the header has)"
            if unparsed and _holds(header, record, unparsed):
                return (
                    f"line {line}: column '{unparsed['column']}' has {unparsed['value']!r}, "
                    f"expected a value of type {unparsed['dtype']} "
                    "(the type Polars inferred from the first rows)"
                )
    except UnicodeDecodeError:
        return utf8_problem(path)
    except csv.Error as exc:
        return f"line {line + 1}: not valid CSV ({exc})"
    return None


def _holds(header: list[str], record: list[str], unparsed: re.Match[str]) -> bool:
    column = unparsed["column"]
    return column in header and record[header.index(column)].strip() == unparsed["value"]


def jsonl_problem(path: Path) -> str | None:
    """The first line with bad UTF-8, invalid JSON, or JSON that is not an object;
    ``None`` when none is found."""
    found = utf8_problem(path)
    if found:
        return found
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                value = json.loads(text.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                return f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})"
            if not isinstance(value, dict):
                kind = type(value).__name__
                return f"line {number}: expected one JSON object per line, got a {kind}"
    return None
