"""Judgement and run files (SPEC 4): where they are and how each one is read, the same
way for :func:`ragframe.read_qrels` and :func:`ragframe.read_run`.

A path is a file, a glob, a folder or ``-`` (standard input). Each file is one of:

* a **table** (by its extension: Parquet, Arrow IPC, CSV, JSON lines), read as
  ragframe reads any table (:func:`ragframe.io.scan_table`: a folder of Parquet files
  may be a hive dataset), the id columns of a CSV read as written, as strings;
* a **BEIR qrels file** (``.tsv``, judgements only): tab-separated ``query-id``,
  ``corpus-id``, ``score`` under a header line, which must be there (a first line that
  is a judgement would otherwise be lost, as BEIR's loader skips it);
* anything else, a **TREC file**: one record a line, fields separated by spaces or
  tabs (qrels ``qid iter docid rel``, runs ``qid Q0 docid rank score tag``).

A folder that holds ``qrels/`` is a BEIR folder: its ``qrels/<split>.tsv``. Any other
folder (hidden names skipped), a glob, or standard input holds files of one kind.
Standard input is a table when its first bytes say Parquet, Arrow or JSON lines, or
when its first line names columns separated by commas (CSV); a BEIR file when its
first line is a tab-separated header; else TREC lines.

Text files are UTF-8; a byte-order mark is dropped, blank lines are skipped, and a
record with more or fewer fields than its format has is an error naming its file and
line. Every id read from text is a string, exactly as written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError, RagframeError
from ragframe.io import _filesystems, _sources, _textfiles

Kind = Literal["table", "beir", "trec"]
FILE, LINE = c.TMP + "file", c.TMP + "line"
"""A text record's file (its index in :attr:`Found.shown`) and line number (1-based)."""
WHITESPACE = " \t\x0b\x0c\r"
"""What separates the fields of a TREC line (ASCII whitespace, as trec_eval splits)."""
_SPLIT = r"[ \t\x0b\x0c\r]+"
TABLES = frozenset(_sources.FORMATS)


@dataclass(frozen=True)
class Found:
    """The files of one judgement or run source, of one kind."""

    kind: Kind
    files: tuple[Path, ...]
    shown: tuple[str, ...]
    """Each file as a message names it (standard input as ``standard input``)."""
    given: str
    """The source as the user gave it."""


def kind_of(path: Path, beir: bool) -> Kind:
    """A file's kind by its extension (``.tsv`` is BEIR's only for judgements)."""
    suffix = path.suffix.lower()
    if suffix in TABLES:
        return "table"
    return "beir" if beir and suffix == ".tsv" else "trec"


def locate(source: str | os.PathLike[str], what: str, *, split: str | None, beir: bool) -> Found:
    """The files of ``source`` (see the module docstring); ``beir``: judgements, which
    may be BEIR files; ``split``: the BEIR split asked for (None: ``test``).

    Raises:
        RagframeError: nothing there, files of several kinds, a BEIR folder without
            the split.
        ConfigError: ``split`` for a source that is not a BEIR folder.
    """
    given = os.fspath(_filesystems.local(source))
    if _filesystems.is_remote(given):  # read from a local copy, messages naming the URI
        try:
            found = locate(_filesystems.fetch(given), what, split=split, beir=beir)
        except RagframeError as exc:
            raise RagframeError(_filesystems.shown(str(exc))) from exc
        return Found(found.kind, found.files, tuple(map(_filesystems.shown, found.shown)), given)
    if given == _sources.STDIO:
        found = _stdin(what, beir)
    elif beir and Path(given).is_dir() and (Path(given) / "qrels").is_dir():
        return _beir_folder(Path(given), given, split or "test")
    else:
        files = _sources.files_of(given, what)
        kinds = {kind_of(f, beir) for f in files}
        if len(kinds) > 1:
            names = sorted({f.suffix or "(no extension)" for f in files})
            raise RagframeError(
                f"{what} {given} holds files of several kinds ({', '.join(names)}); "
                "expected tables of one format, BEIR .tsv files or TREC text files"
            )
        found = Found(kinds.pop(), files, tuple(map(os.fspath, files)), given)
    if split is not None:
        raise ConfigError(f"split is for a BEIR folder (qrels/<split>.tsv); {given} is not one")
    return found


def _beir_folder(folder: Path, given: str, split: str) -> Found:
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        found = sorted(p.name for p in (folder / "qrels").glob("*.tsv"))
        raise RagframeError(f"BEIR folder {given}: no qrels/{split}.tsv; found {found}")
    return Found("beir", (path,), (os.fspath(path),), given)


def _stdin(what: str, beir: bool) -> Found:
    path = _sources.spool_stdin()
    kind: Kind = "table"
    if _sources.table_format(path) == "csv":
        first = _first_line(path)
        if beir and "\t" in first and not _is_integer(first.split("\t")[-1]):
            kind = "beir"
        elif "," not in first:
            kind = "trec"
    return Found(kind, (path,), ("standard input",), _sources.STDIO)


def _first_line(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            text = raw.decode("utf-8", "replace").removeprefix("\ufeff").strip(WHITESPACE + "\n")
            if text:
                return text
    return ""


def _is_integer(text: str) -> bool:
    try:
        int(text.strip())
    except ValueError:
        return False
    return True


def _lines(path: Path, shown: str, expected: str) -> pl.DataFrame:
    """``line`` (its number, 1-based) and ``text`` of each non-blank line of a UTF-8
    file, a leading byte-order mark dropped; an empty file is an error."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise RagframeError(f"cannot read {shown}: {_textfiles.utf8_problem(path)}") from None
    except OSError as exc:
        raise RagframeError(f"cannot read {shown}: {exc.strerror or exc}") from None
    lines = pl.Series("text", [text.removeprefix("\ufeff")], dtype=pl.String).str.split("\n")
    frame = lines.explode().to_frame().with_row_index(LINE, offset=1)
    frame = frame.filter(pl.col("text").str.strip_chars(WHITESPACE) != "")
    if not frame.height:
        raise RagframeError(f"cannot read {shown}: the file is empty; expected {expected}")
    return frame.with_columns(pl.col(LINE).cast(pl.Int64))


def records(found: Found, names: Sequence[str], what: str, *, tabs: bool = False) -> pl.DataFrame:
    """Every record of ``found``'s text files as string columns ``names``, with
    :data:`FILE` and :data:`LINE`; a line with another number of fields is an error
    naming it. ``tabs``: fields separated by single tabs (BEIR), else by runs of
    whitespace (TREC)."""
    expected = f"{what} lines of {len(names)} fields ({' '.join(names)})"
    frames = []
    for number, (path, shown) in enumerate(zip(found.files, found.shown, strict=True)):
        lines = _lines(path, shown, expected).with_columns(pl.lit(number, pl.Int64).alias(FILE))
        if tabs:
            fields = pl.col("text").str.strip_suffix("\r").str.split("\t")
        else:
            squeezed = pl.col("text").str.strip_chars(WHITESPACE).str.replace_all(_SPLIT, " ")
            fields = squeezed.str.split(" ")
        lines = lines.with_columns(fields.alias("fields"))
        wrong = lines.filter(pl.col("fields").list.len() != len(names))
        if wrong.height:
            line, text = wrong[LINE][0], wrong["text"][0]
            got = len(wrong["fields"][0])
            raise RagframeError(
                f"{shown}, line {line}: expected {len(names)} fields ({' '.join(names)}), "
                f"got {got}: {text!r}"
                + (f" ({wrong.height} such lines)" if wrong.height > 1 else "")
            )
        frames.append(lines)
    every = pl.concat(frames, how="vertical")
    return every.select(
        FILE, LINE, *(pl.col("fields").list.get(i).alias(n) for i, n in enumerate(names))
    )


def beir_records(found: Found) -> pl.DataFrame:
    """The judgements of BEIR ``.tsv`` files: ``query-id corpus-id score`` under a
    header, checked (a first line whose score is an integer is a judgement, not the
    header: an error, as BEIR would skip it)."""
    names = ["query-id", "corpus-id", "score"]
    rows = records(found, names, "BEIR qrels", tabs=True)
    firsts = rows.filter(pl.col(LINE) == pl.col(LINE).min().over(FILE))
    number = firsts["score"].str.strip_chars(" ").cast(pl.Int64, strict=False)
    if number.is_not_null().any():
        at = int(number.is_not_null().arg_true()[0])
        shown = found.shown[firsts[FILE][at]]
        raise RagframeError(
            f"{shown}, line {firsts[LINE][at]}: expected the header query-id, corpus-id, "
            f"score; got a judgement {firsts['query-id'][at]!r}, {firsts['corpus-id'][at]!r}, "
            f"{firsts['score'][at]!r} (BEIR files start with a header line; add it)"
        )
    header = pl.struct(FILE, LINE).is_in(firsts.select(FILE, LINE).to_struct().implode())
    return rows.filter(~header)


def place(found: Found | None, frame: pl.DataFrame, given: str, row: int) -> str:
    """Where row ``row`` of ``frame`` came from, as a message names it: ``FILE, line N``
    for a text record, ``SOURCE: row N`` for a table's row (0-based), ``row N`` for a
    frame's."""
    if found is not None and FILE in frame.columns:
        return f"{found.shown[frame[FILE][row]]}, line {frame[LINE][row]}"
    number = frame[c.T_ROW][row] if c.T_ROW in frame.columns else row
    return f"{given}: row {number}" if given else f"row {number}"
