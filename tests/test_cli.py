"""The ``ragframe`` commands: formats, summary, errors, atomic output, and the options
generated from each config (one per field, with help and default, old spellings kept)."""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pytest

import ragframe
from ragframe import schema as c
from ragframe.cli import build_parser, main
from ragframe.cli._options import add_config_options, config_from_args, docstring_args
from ragframe.fetch import FetchConfig, fetch
from ragframe.io import read_table, write_table
from ragframe.postprocess import PostprocessConfig
from tests.conftest import cand, frame

ROOT = Path(__file__).resolve().parents[1]

ROWS = [
    cand(1, "Intro text before. Shared overlap phrase for removal", 0.90, 0, title="t1"),
    cand(1, "Shared overlap phrase for removal and unique second.", 0.80, 1, title="t1"),
    cand(2, "A document about something else entirely.", 0.85, 0, title="t2"),
    cand(3, "Weak match", 0.10, 0, title="t3", query_id=2),
    cand(4, "Long text " * 40, 0.70, 3, title="t4", query_id=2),
]
FORMATS = ["parquet", "arrow", "csv", "jsonl"]


def _expected(df: pl.DataFrame, cfg: PostprocessConfig) -> pl.DataFrame:
    return ragframe.postprocess(df, cfg).collect()


def _cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_roundtrip_each_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    df = frame(ROWS)
    source, target = tmp_path / f"results.{fmt}", tmp_path / "out" / f"blocks.{fmt}"
    write_table(df, source)
    code, _, err = _cli(capsys, "postprocess", source, "-o", target, "--max-characters", 300)
    assert (code, err) == (0, "")
    want = _expected(df, PostprocessConfig(max_characters=300))
    got = read_table(target)
    if fmt == "csv":
        joined = pl.col(c.CHUNK_INDEXES).cast(pl.List(pl.String)).list.join(",")
        want = want.with_columns(joined)
    assert got.columns == want.columns
    assert got.to_dicts() == want.to_dicts()
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "r.parquet"
    write_table(frame(ROWS), source)
    code, out, _ = _cli(capsys, "postprocess", source, "-o", tmp_path / "b.parquet")
    assert code == 0
    assert out.splitlines()[0] == "ragframe postprocess"
    blocks = read_table(tmp_path / "b.parquet")
    assert _value(out, "queries") == "2"
    assert _value(out, "candidates in") == "5"
    assert _value(out, "blocks out") == str(blocks.height)
    assert _value(out, "characters out") == f"{blocks[c.CHAR_COUNT].sum():,}"
    assert _value(out, "truncated blocks") == str(blocks[c.TRUNCATED].sum())
    assert float(_value(out, "seconds")) >= 0


def _value(out: str, key: str) -> str:
    for line in out.splitlines():
        if line.strip().startswith(key + "  "):
            return line.strip()[len(key) :].strip()
    raise AssertionError(f"no {key!r} in summary:\n{out}")


def test_options_reach_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, target = tmp_path / "r.parquet", tmp_path / "b.parquet"
    write_table(frame(ROWS), source)
    argv = ["--top-k", 2, "--min-similarity", 0.5, "--max-chunk-gap", 0, "--max-blocks", 1]
    argv += ["--max-characters", 30, "--max-merged-block-characters", 40, "--overlap", "text"]
    code, _, err = _cli(capsys, "postprocess", source, "-o", target, *argv)
    assert (code, err) == (0, "")
    cfg = PostprocessConfig(
        top_k=2,
        min_similarity=0.5,
        max_chunk_gap=0,
        max_blocks=1,
        max_characters=30,
        max_merged_block_characters=40,
    )
    assert read_table(target).equals(_expected(frame(ROWS), cfg))


def test_chunk_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    df = frame(ROWS).rename({c.ENTITY_ID: c.DOC_ID})
    results, chunks = tmp_path / "results.parquet", tmp_path / "chunks.csv"
    write_table(df.drop(c.TEXT), results)
    write_table(df.select(c.DOC_ID, c.CHUNK_INDEX, c.TEXT), chunks)
    target = tmp_path / "blocks.jsonl"
    code, _, err = _cli(capsys, "postprocess", results, "--chunks", chunks, "-o", target)
    assert (code, err) == (0, "")
    got = read_table(target)
    want = _expected(frame(ROWS), PostprocessConfig())
    assert got[c.TEXT].to_list() == want[c.TEXT].to_list()


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["postprocess", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option, default in [
        ("--chunks", None),
        ("--output", None),
        ("--top-k", "10"),
        ("--min-similarity", "0.3"),
        ("--max-chunk-gap", "1"),
        ("--max-blocks", "5"),
        ("--max-characters", "8000"),
        ("--max-merged-block-characters", "2000"),
        ("--overlap", "'text'"),
    ]:
        assert option in text
        if default is not None:
            after = text[text.index(option + " ") :]
            assert f"(default: {default})" in after, option
    for column in c.BLOCK_COLUMNS:
        assert column in text


# --- failures: one error line, exit 2, nothing written --------------------------------


def _bad_similarity(tmp_path: Path) -> Path:
    path = tmp_path / "bad.parquet"
    write_table(frame(ROWS).with_columns(pl.col(c.SIMILARITY).cast(pl.String)), path)
    return path


def _nan_similarity(tmp_path: Path) -> Path:
    path = tmp_path / "nan.parquet"
    write_table(frame(ROWS).with_columns(pl.lit(float("nan")).alias(c.SIMILARITY)), path)
    return path


def _missing_column(tmp_path: Path) -> Path:
    path = tmp_path / "missing.csv"
    write_table(frame(ROWS).drop(c.SIMILARITY), path)
    return path


def _good(tmp_path: Path) -> Path:
    path = tmp_path / "good.parquet"
    write_table(frame(ROWS), path)
    return path


@pytest.mark.parametrize(
    ("make", "extra", "message"),
    [
        (_good, ["--top-k", "0"], "top_k must be in [1, 4611686018427387904], got 0"),
        (_good, ["--min-similarity", "1.5"], "min_similarity must be in [0, 1], got 1.5"),
        (lambda p: p / "absent.parquet", [], "input file not found: "),
        (lambda p: p / "results.txt", [], "unsupported file extension '.txt'"),
        (_good, ["--chunks", "/nonexistent/chunks.parquet"], "input file not found: "),
        (_missing_column, [], "candidates: missing column 'similarity'; found: "),
        (_bad_similarity, [], "candidates: column 'similarity' has type String"),
        (_nan_similarity, [], ""),
    ],
    ids=[
        "top_k",
        "min_similarity",
        "missing_file",
        "bad_extension",
        "missing_chunks",
        "missing_column",
        "wrong_dtype",
        "nan_score",
    ],
)
def test_errors_exit_2_with_one_line_and_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, extra: list[str], message: str
) -> None:
    source = make(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "kept.parquet").write_bytes(b"previous")
    for target in (out_dir / "new.parquet", out_dir / "kept.parquet"):
        code, out, err = _cli(capsys, "postprocess", source, "-o", target, *extra)
        assert code == 2
        assert out == ""
        assert err.startswith("error: " + message), err
        assert err.count("\n") == 1 and err.endswith("\n"), err
    assert sorted(p.name for p in out_dir.iterdir()) == ["kept.parquet"]
    assert (out_dir / "kept.parquet").read_bytes() == b"previous"


def test_bad_output_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "postprocess", _good(tmp_path), "-o", tmp_path / "blocks.xlsx")
    assert code == 2
    assert err.startswith("error: unsupported file extension '.xlsx'")
    assert not (tmp_path / "blocks.xlsx").exists()


def test_console_script_has_no_traceback(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "ragframe.cli", "postprocess", str(tmp_path / "x.parquet")]
    proc = subprocess.run([*cmd, "-o", str(tmp_path / "y.parquet")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: input file not found")
    assert "Traceback" not in proc.stderr


DEFAULT_DATA = ROOT / "data"


@pytest.mark.skipif(not (DEFAULT_DATA / "results.parquet").is_file(), reason="no default data")
def test_readme_first_command_on_default_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "blocks.parquet"
    results, chunks = DEFAULT_DATA / "results.parquet", DEFAULT_DATA / "chunks.parquet"
    code, out, err = _cli(capsys, "postprocess", results, "--chunks", chunks, "-o", target)
    assert (code, err) == (0, "")
    blocks = read_table(target)
    queries = pl.read_parquet(DEFAULT_DATA / "queries.parquet")
    assert blocks[c.QUERY_ID].n_unique() == queries.height
    assert blocks[c.TEXT].str.len_chars().min() > 0  # type: ignore[operator]
    assert _value(out, "queries") == str(queries.height)


# --- options generated from the configs ----------------------------------------------


def _subparser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[command]
    return parser


def _shown(default: object) -> str:
    return f"(default: {default!r})" if isinstance(default, str) else f"(default: {default})"


@pytest.mark.parametrize(
    ("command", "config"),
    [("postprocess", PostprocessConfig), ("fetch", FetchConfig)],
    ids=["postprocess", "fetch"],
)
def test_every_config_field_has_an_option_with_help_and_default(
    command: str, config: type[Any]
) -> None:
    parser = _subparser(command)
    actions = {a.dest: a for a in parser._actions}
    text = " ".join(parser.format_help().split())
    for field in dataclasses.fields(config):
        action = actions.get(field.name)
        assert action is not None, f"{config.__name__}.{field.name} has no option"
        assert "--" + field.name.replace("_", "-") in action.option_strings
        assert action.default == field.default
        shown = _shown(field.default)
        assert action.help is not None and action.help.endswith(shown), field.name
        assert action.help.removesuffix(shown).strip(), f"{field.name} has no help"
        assert "see" not in action.help.split(), field.name  # the defining class's text
        assert shown in text[text.index(action.option_strings[0] + " ") :], field.name


def _fetch_args(*options: str) -> argparse.Namespace:
    return build_parser().parse_args(["fetch", "r.csv", "d.csv", "-o", "o.csv", *options])


@pytest.mark.parametrize(
    "options",
    [
        ["--threshold", "400", "--fragments", "2"],
        ["--fulltext-threshold", "400", "--number-of-fragments", "2"],
    ],
    ids=["old", "new"],
)
def test_fetch_spellings_parse_to_the_same_config(options: list[str]) -> None:
    got = config_from_args(FetchConfig, _fetch_args(*options))
    assert got == FetchConfig(fulltext_threshold=400, number_of_fragments=2)


def test_fetch_options_default_to_the_config() -> None:
    assert config_from_args(FetchConfig, _fetch_args()) == FetchConfig()


BOUNDARY_TEXT = "alpha bravo charlie delta echo foxtrot lift golf hotel india juliet kilo lima"


@pytest.mark.parametrize(
    "options",
    [["--boundary-max-scan", "0"], ["--boundary-chars", "o"]],
    ids=["max-scan", "chars"],
)
def test_fetch_boundary_options_change_the_passages(tmp_path: Path, options: list[str]) -> None:
    requests = pl.DataFrame({"query_id": [1], "query": ["lift"], "doc_id": [1]})
    documents = pl.DataFrame({"doc_id": [1], "content": [BOUNDARY_TEXT]})
    requests.write_parquet(tmp_path / "r.parquet")
    documents.write_parquet(tmp_path / "d.parquet")
    base = ["--threshold", "10", "--fragment-size", "20", "--fragments", "1"]

    def run(name: str, *extra: str) -> list[str]:
        argv = ["fetch", str(tmp_path / "r.parquet"), str(tmp_path / "d.parquet")]
        assert main([*argv, "-o", str(tmp_path / name), *base, *extra]) == 0
        return pl.read_parquet(tmp_path / name)["content"].to_list()

    default, changed = run("default.parquet"), run("changed.parquet", *options)
    assert default == ["foxtrot lift golf hotel..."]
    assert changed != default
    key = options[0].removeprefix("--").replace("-", "_")
    value: object = int(options[1]) if key == "boundary_max_scan" else options[1]
    cfg = FetchConfig(fulltext_threshold=10, fragment_size=20, number_of_fragments=1)
    want = fetch(requests, documents, dataclasses.replace(cfg, **{key: value})).collect()
    assert changed == want["content"].to_list()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Base:
    """A base config.

    Args:
        size: how big, in %
            of the whole.
        mode: ``"a"`` or ``"b"``.
        name: who.

    Raises:
        ValueError: never.
    """

    size: int = 5
    mode: Literal["a", "b"] = "a"
    name: str = "x\ty"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Derived(_Base):
    """A derived config.

    Args:
        ratio: a share (:class:`~ragframe.PostprocessConfig`).
        size, mode,
            name: see :class:`_Base`.
    """

    ratio: float
    name: str = "z"


def test_docstring_args_parses_entries_and_continuations() -> None:
    assert docstring_args(_Base) == {
        "size": "how big, in % of the whole.",
        "mode": '"a" or "b".',
        "name": "who.",
    }
    derived = docstring_args(_Derived)
    assert derived["ratio"] == "a share (PostprocessConfig)."
    assert derived["size"] == derived["mode"] == derived["name"] == "see _Base."


def test_generated_options_for_a_subclass() -> None:
    parser = argparse.ArgumentParser()
    add_config_options(parser, _Derived, aliases={"size": ["--old-size"]})
    actions = {a.dest: a for a in parser._actions if a.dest != "help"}
    assert list(actions) == ["name", "ratio", "size", "mode"]  # own fields first
    assert actions["ratio"].required and actions["ratio"].metavar == "X"
    assert actions["ratio"].help == "a share (PostprocessConfig)"
    assert actions["size"].help == "how big, in %% of the whole (default: 5)"
    assert actions["size"].option_strings == ["--size", "--old-size"]
    assert actions["mode"].choices == ["a", "b"]
    assert actions["name"].help == "see _Base (default: 'z')"  # redefined: its own text
    assert "in % of the whole" in " ".join(parser.format_help().split())
    args = parser.parse_args(["--ratio", "0.5", "--old-size", "7", "--mode", "b"])
    assert config_from_args(_Derived, args) == _Derived(ratio=0.5, size=7, mode="b")
    with pytest.raises(ValueError, match="unknown _Derived fields"):
        add_config_options(argparse.ArgumentParser(), _Derived, aliases={"nope": ["--n"]})


@pytest.mark.parametrize("engine", ["dask", "ray"])
@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["postprocess", "r.parquet"], "--rows-per-partition"),
        (["fetch", "q.parquet", "d.parquet"], "--text-per-partition"),
        (["chunk", "d.parquet", "--window", "40"], "--text-per-partition"),
    ],
)
def test_local_partition_sizes_are_refused_on_the_engines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, command: list[str], option: str
) -> None:
    """A local engine's partition size with --engine dask|ray is one error line (not
    ignored), before any input is read or a cluster started; without it, it is no error."""
    out = tmp_path / "o.parquet"
    argv = [*command, "-o", out, "--engine", engine, option, "1000"]
    code, stdout, err = _cli(capsys, *argv)
    assert code == 2 and stdout == ""
    assert err == (
        f"error: {option} is for the local engine (--engine {engine} sizes its partitions "
        "by --partitions)\n"
    )
    assert not out.exists()
    code, _, err = _cli(capsys, *command, "-o", out, "--engine", engine, "--partitions", "0")
    assert err == "error: --partitions must be >= 1, got 0\n"  # the sizes left alone: None
