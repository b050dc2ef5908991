"""The package's shape: no import cycles, an independent reference, self-contained
kernel files, a compiled-kernel cache that cannot go stale, and commands that load only
what they use."""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ragframe
from ragframe import cli
from ragframe._kernels import _ahead, _compile, _jit, _own, _preload
from ragframe.postprocess import _kernels  # noqa: F401 -- plans postprocess's run order

PACKAGE = Path(ragframe.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """The ragframe modules ``name`` imports (a name imported from a package counts as
    the submodule when it is one, else as the package)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "ragframe"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            if base.split(".")[0] != "ragframe":
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
    return found - {name}


GRAPH = {name: _imports(name) for name in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (its nodes in order, the first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for nxt in sorted(graph.get(name, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt in graph and not state.get(nxt):
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return None

    for name in graph:
        if not state.get(name):
            found = visit(name)
            if found:
                return found
    return None


def test_the_import_graph_has_no_cycle() -> None:
    """Data flows down: no module imports, directly or not, a module that imports it."""
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    looped = {name: set(edges) for name, edges in GRAPH.items()}
    looped["ragframe.schema"].add("ragframe.postprocess")  # postprocess imports schema
    assert find_cycle(looped) is not None


def test_the_reference_imports_nothing_from_the_engine() -> None:
    for name, imported in GRAPH.items():
        if name.startswith("ragframe.reference"):
            outside = {m for m in imported if not m.startswith("ragframe.reference")}
            assert not outside, f"{name} imports {sorted(outside)}"


def _in_shared_family(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _own.SHARED)


def test_kernel_files_import_only_kernel_files_and_the_arrow_reader() -> None:
    """Everything compiled is in the files the cache key hashes: a file of the shared
    family imports only the family's files (and the Arrow reader)."""
    for name, imported in GRAPH.items():
        if _in_shared_family(name):
            outside = {m for m in imported if not _in_shared_family(m) and m != "ragframe._arrow"}
            assert not outside, f"{name} imports {sorted(outside)}"
    arrow = ast.dump(ast.parse(MODULES["ragframe._arrow"].read_text()))
    assert "numba" not in arrow  # read at run time only, never compiled


def test_the_cache_key_changes_with_any_kernel_file(tmp_path: Path) -> None:
    """Editing a constant in one kernel file (MIN_OVERLAP, read by another file's
    kernels) changes the key, so nothing compiled before is reused; so does a new file
    in any of the family's folders, the shared building blocks' included."""
    assert PACKAGE / "postprocess" / "_kernels" in _jit.KERNELS
    assert PACKAGE / "_kernels" in _jit.KERNELS
    copies = []
    for i, folder in enumerate(_jit.KERNELS):
        copies.append(tmp_path / str(i) / folder.name)
        shutil.copytree(folder, copies[-1], ignore=shutil.ignore_patterns("__pycache__"))
    before = _jit.sources_hash(*copies)
    assert before == _jit.sources_hash(*_jit.KERNELS)
    overlap = copies[list(_jit.KERNELS).index(PACKAGE / "postprocess" / "_kernels")] / "_overlap.py"
    text = overlap.read_text()
    assert "MIN_OVERLAP = 20" in text
    overlap.write_text(text.replace("MIN_OVERLAP = 20", "MIN_OVERLAP = 21"))
    assert _jit.sources_hash(*copies) != before
    overlap.write_text(text)
    for copy in copies:
        (copy / "_new.py").write_text("X = 1\n")
        assert _jit.sources_hash(*copies) != before
        (copy / "_new.py").unlink()
    assert _jit.sources_hash(*copies) == before
    assert _jit.cache_key().endswith(before)


def test_every_kernel_folder_is_in_the_shared_family_or_cached_on_its_own() -> None:
    """A file that marks kernels with the shared decorators is either in the shared
    family's folders (keyed with them) or keeps its kernels on its own
    (``keep_in_user_cache``, keyed on its own source): never cached unkeyed."""
    for name, path in MODULES.items():
        text = path.read_text()
        if "@compiled" not in text or _in_shared_family(name):
            continue
        assert "keep_in_user_cache(__file__)" in text, name


RETRIEVE_KERNELS = "ragframe.retrieve._kernels"


def test_retrieves_kernels_are_keyed_on_every_file_of_their_folder(tmp_path: Path) -> None:
    """The retrieve kernel files call the heap's helpers (``_heap``) and import nothing
    else compiled; their kernels are cached under a key that hashes every file of the
    folder, so an edit of the heap's file alone compiles both top-k kernels afresh."""
    for name, imported in GRAPH.items():
        if name.startswith(RETRIEVE_KERNELS + "."):
            outside = {m for m in imported if not m.startswith(RETRIEVE_KERNELS)}
            assert outside <= {"ragframe._kernels._jit", "ragframe._kernels._own"}, name
    from ragframe.retrieve._kernels import _search  # noqa: F401 -- marks its folder

    folder = PACKAGE / "retrieve" / "_kernels"
    for name in ("_search.py", "_topk.py"):
        assert "from ragframe.retrieve._kernels._heap import" in (folder / name).read_text()
    assert _own.cache_source(str(folder / "_search.py")) == folder
    assert _own.cache_source(str(PACKAGE / "postprocess" / "_kernels" / "_order.py")) is None
    with pytest.raises(LookupError):
        _own.cache_source(str(PACKAGE / "schema.py"))
    copy = tmp_path / "_kernels"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _jit.sources_hash(copy)
    assert before == _jit.sources_hash(folder)
    assert _jit.cache_key(folder).endswith(f"-retrieve_kernels-{before}")
    heap = copy / "_heap.py"
    heap.write_text(heap.read_text().replace("s1 > s2", "s1 >= s2"))
    assert _jit.sources_hash(copy) != before


def test_the_cache_lives_in_a_per_user_folder_outside_the_package(tmp_path: Path) -> None:
    """A kernel compiled in a fresh process lands under RAGFRAME_CACHE_DIR/<key>, and
    nothing is written into the package (an install or uninstall leaves nothing). (With
    the second process switched off: it would compile ``_merge`` for nothing here.)"""
    assert _jit.LOCATOR_INSTALLED
    env = {**os.environ, _jit.CACHE_ENV: str(tmp_path), _ahead.SWITCH: "0"}
    code = (
        "import numpy as np\n"
        "from ragframe._kernels import _ahead, _jit\n"
        "from ragframe.postprocess._kernels import _order\n"
        "starts = np.array([True, False, True]); keys = np.array([[2], [1], [0]])\n"
        "print(_order.ordered_in_segments(starts, keys).tolist())\n"
        "print(_jit.cache_folder())\n"
        "import sys; print('numba.np.linalg' in sys.modules, len(_ahead._AHEAD))\n"
    )
    before = set(PACKAGE.rglob("*.nbi"))
    run = [sys.executable, "-c", code]
    done = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    order, folder, set_up = done.stdout.splitlines()
    assert order == "[1, 0, 2]"
    assert Path(folder) == tmp_path / _jit.cache_key()
    assert any(Path(folder).glob("_order._ordered_in_segments-*.nbi"))
    assert set(PACKAGE.rglob("*.nbi")) == before
    # the user is told while it compiles, and only then: the second run loads it
    assert done.stderr.count("ragframe: compiling kernels, first run only") == 1
    assert set_up == "True 0"  # compiling set numba up for compiling (and no second process) ...
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert again.stdout.splitlines()[:2] == [order, folder]
    assert "compiling" not in again.stderr
    assert again.stdout.splitlines()[2] == "False 0"  # ... loading did not need to


def test_evaluates_kernels_are_cached_in_the_per_user_folder_too(tmp_path: Path) -> None:
    """The evaluate ranking kernels (numba's ``cache=True``, outside the kernel folder)
    land under RAGFRAME_CACHE_DIR in a folder keyed on their own file, never beside it:
    in an installed package that would be ``site-packages``, left behind by pip."""
    env = {**os.environ, _jit.CACHE_ENV: str(tmp_path)}
    code = (
        "import numpy as np\n"
        "from ragframe.evaluate import _ranking\n"
        "starts = np.array([0, 3]); key = np.array([5, 7, 5]); score = np.array([.1, .9, .4])\n"
        "print([a.tolist() for a in _ranking.rank_documents(starts, key, score)])\n"
    )
    before = set(PACKAGE.rglob("*.nb[ic]"))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("[[")
    assert done.stderr.count("ragframe: compiling kernels, first run only") == 1
    folders = [p.name for p in tmp_path.iterdir()]
    assert len(folders) == 1 and "-ranking-" in folders[0], folders
    assert any((tmp_path / folders[0]).glob("_ranking.rank_documents-*.nbi"))
    assert set(PACKAGE.rglob("*.nb[ic]")) == before


@pytest.mark.skipif(_ahead._threads() < 2, reason="one CPU: no second process")
def test_a_first_run_compiles_the_later_kernels_in_a_second_process(tmp_path: Path) -> None:
    """From an empty cache, ``postprocess`` compiles its first kernel while a second
    process compiles the last (loaded from the cache here once it is done); the result
    is the same, the user is told once, and the second process has ended. The second
    process imports this ragframe even from a folder holding another (the current
    folder is not on its path); ``_write`` (a merge that leaves its blocks unwritten)
    is compiled by neither."""
    decoy = tmp_path / "decoy" / "ragframe"  # a source tree of some other version
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise SystemExit('the current folder's ragframe')\n")
    env = {
        **os.environ,
        _jit.CACHE_ENV: str(tmp_path / "cache"),
        _ahead.SWITCH: "1",
        "PYTHONPATH": str(PACKAGE.parent),
    }
    data = PACKAGE.parent / "data"
    argv = [str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet")]
    code = (
        "import sys\n"
        "from ragframe.cli import main\n"
        "from ragframe._kernels import _ahead\n"
        "from ragframe.postprocess._kernels import _merge, _pieces, _store\n"
        f"assert main(['postprocess', *{argv!r}, '-o', sys.argv[1]]) == 0\n"
        "stats = _store._dense_probe.stats.cache_misses, _merge._merge.stats.cache_hits\n"
        "assert _pieces._write.jitted is None or not _pieces._write.signatures\n"
        "print(*(sum(counter.values()) for counter in stats))\n"
        "print(_ahead._AHEAD[0].process.wait(timeout=60))\n"
    )
    run = [sys.executable, "-P", "-c", code]
    cold = subprocess.run(
        [*run, str(tmp_path / "cold.parquet")],
        env=env,
        capture_output=True,
        text=True,
        cwd=decoy.parent,
    )
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr.count("ragframe: compiling kernels, first run only") == 1
    counts, ended = cold.stdout.splitlines()[-2:]
    assert counts == "1 1"  # the store lookup compiled here, _merge loaded
    assert ended == "0"
    warm = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragframe.cli",
            "postprocess",
            *argv,
            "-o",
            str(tmp_path / "warm.parquet"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert warm.returncode == 0 and "compiling" not in warm.stderr
    assert (tmp_path / "cold.parquet").read_bytes() == (tmp_path / "warm.parquet").read_bytes()


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.skipif(_ahead._threads() < 2, reason="one CPU: no second process")
def test_the_second_process_ends_when_this_one_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of a first run leaves no compiling process behind: the second process
    watches its stdin, which closes with its parent, and ends at once, mid-compile (it
    is killed once it has loaded numba's compiler, seconds before it could finish)."""
    env = {**os.environ, _jit.CACHE_ENV: str(tmp_path / "cache"), _ahead.SWITCH: "1"}
    data = PACKAGE.parent / "data"
    argv = ["postprocess", str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet")]
    cli_run = [sys.executable, "-m", "ragframe.cli", *argv, "-o", str(tmp_path / "x.parquet")]
    parent = subprocess.Popen(
        cli_run, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while not (second := _children(parent.pid)) and time.monotonic() < deadline:
            assert parent.poll() is None, "ended before starting a second process"
            time.sleep(0.05)
        assert second, "no second process"
        maps = Path(f"/proc/{second[0]}/maps")
        while _alive(second[0]) and "llvmlite" not in maps.read_text(errors="replace"):
            time.sleep(0.05)  # compiling from here on
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 3
    while any(map(_alive, second)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, second))
    assert not (tmp_path / "x.parquet").exists()


# --- what a command loads --------------------------------------------------------------

WATCHED = (
    "numba",
    "numpy",
    "polars",
    "pyarrow",
    "ragframe.evaluate",
    "ragframe.fetch",
    "ragframe.postprocess",
    "ragframe._kernels._jit",
    "ragframe.retrieve",
    "ragframe.window",
)
"""Modules whose loading costs a command's start-up time."""


def _loaded(tmp_path: Path, code: str) -> set[str]:
    """Which of :data:`WATCHED` a fresh interpreter has loaded after running ``code``."""
    code += f"\nimport sys; print(sorted(set(sys.modules) & {set(WATCHED)!r}))"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return set(ast.literal_eval(done.stdout.splitlines()[-1]))


def _command(*argv: str) -> str:
    return (
        "from ragframe.cli import main\n"
        f"try:\n    code = main({list(argv)!r})\nexcept SystemExit as e:\n    code = e.code\n"
        "assert code == 0, code\n"
    )


def test_import_ragframe_loads_no_stage_until_a_name_is_used(tmp_path: Path) -> None:
    assert _loaded(tmp_path, "import ragframe") == set()
    used = "import ragframe\nassert callable(ragframe.postprocess), ragframe.postprocess"
    assert _loaded(tmp_path, used) == {"numpy", "polars", "pyarrow", "ragframe.postprocess"}


def test_the_public_names_are_the_functions_even_after_their_subpackage_is_imported(
    tmp_path: Path,
) -> None:
    """``ragframe.fetch`` (and ``postprocess``, ``evaluate``) stay the functions that
    ``__all__`` lists, whichever was imported first, the name or the subpackage."""
    code = (
        "import ragframe.fetch._strategy, ragframe.postprocess._config, ragframe.evaluate\n"
        "import ragframe\n"
        "assert ragframe.fetch.__module__ == 'ragframe.fetch._strategy', ragframe.fetch\n"
        "assert ragframe.postprocess.__module__ == 'ragframe.postprocess', ragframe.postprocess\n"
        "assert callable(ragframe.evaluate), ragframe.evaluate\n"
        "assert all(hasattr(ragframe, name) for name in ragframe.__all__)\n"
    )
    assert "ragframe.fetch" in _loaded(tmp_path, code)
    assert sorted(ragframe.__all__) == ragframe.__all__
    assert set(dir(ragframe)) >= set(ragframe.__all__)


def test_help_loads_no_stage(tmp_path: Path) -> None:
    assert _loaded(tmp_path, _command("--help")) == {"polars"}
    assert _loaded(tmp_path, _command("--version")) == {"polars"}


@pytest.mark.parametrize(
    ("command", "stage"),
    [
        ("retrieve", "ragframe.retrieve"),
        ("postprocess", "ragframe.postprocess"),
        ("fetch", "ragframe.fetch"),
        ("evaluate", "ragframe.evaluate"),
        ("window", "ragframe.window"),
        ("chunk", "ragframe.window"),
    ],
)
def test_a_command_help_loads_its_stage_and_no_compiled_kernels(
    tmp_path: Path, command: str, stage: str
) -> None:
    loaded = _loaded(tmp_path, _command(command, "--help"))
    assert stage in loaded
    assert not loaded & {"numba", "ragframe._kernels._jit"}


def test_fetch_and_chunk_run_without_numba(tmp_path: Path) -> None:
    """Real runs: neither command compiles or loads a postprocess kernel."""
    code = (
        "import polars as pl\n"
        "pl.DataFrame({'query_id': [1], 'query': ['lift'], 'doc_id': [1]}).write_parquet('r.pq')\n"
        "pl.DataFrame({'doc_id': [1], 'content': ['a lift to go']}).write_parquet('d.pq')\n"
    )
    fetch = _command("fetch", "r.pq", "d.pq", "-o", "f.parquet")
    chunk = _command("chunk", "d.pq", "-o", "c.parquet", "--window", "4", "--overlap", "1")
    loaded = _loaded(tmp_path, code + fetch + chunk)
    assert {"ragframe.fetch", "ragframe.window"} <= loaded
    assert not loaded & {"numba", "ragframe.postprocess"}
    assert (tmp_path / "f.parquet").is_file() and (tmp_path / "c.parquet").is_file()


def test_postprocess_never_loads_pandas_or_arrow_compute(tmp_path: Path) -> None:
    """A real postprocess run, in the engine, in token mode and by the CLI, imports
    neither pandas (pyarrow's ``pa.array`` of a numpy array, or ``to_numpy`` of an Arrow
    array, would where pandas is installed: 0.3-0.7 s of a command's start) nor
    ``pyarrow.compute`` (``pl.Series`` of an Arrow array would: 45 ms). Meaningful
    where pandas is installed (the test extra's Dask brings it)."""
    pytest.importorskip("pandas")
    data = PACKAGE.parent / "data"
    cli_run = _command(
        "postprocess", str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet"),
        "-o", "blocks.parquet", "-q",
    )  # fmt: skip
    code = (
        "import sys, ragframe, polars as pl\n"
        f"rows = pl.read_parquet({str(data / 'results.parquet')!r})\n"
        f"store = pl.read_parquet({str(data / 'chunks.parquet')!r})\n"
        "assert ragframe.postprocess(rows, chunks=store).collect().height\n"
        "config = {'length': 'tokens', 'tokenizer': lambda t: [len(x.split()) for x in t]}\n"
        "assert ragframe.postprocess(rows, config, chunks=store).collect().height\n"
        f"{cli_run}"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas' "
        "or m == 'pyarrow.compute'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_warm_postprocess_loads_no_numba_array_math(tmp_path: Path) -> None:
    """Loading the kernels from the cache needs only numba's runtime: a kernel whose
    compiled form calls numpy functions numba implements in ``numba.np.arraymath``
    (``np.searchsorted``, ``.max()``) pulls that module (and ``numba.np.linalg``) into
    every load, 0.19 s of a short run's start. The first run compiles every kernel it
    runs, even on few rows (and so sets everything up); the second only loads."""
    data = PACKAGE.parent / "data"
    run = _command(
        "postprocess", str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet"),
        "-o", "blocks.parquet", "-q",
    )  # fmt: skip
    check = "import sys; print(sorted(m for m in sys.modules if m.startswith('numba.np.')))\n"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    for rows in ("0", ""):  # compiled however few the rows, then as a run is
        done = subprocess.run(
            [sys.executable, "-c", run + check],
            cwd=tmp_path,
            env={**env, _compile.PYTHON_ROWS_ENV: rows},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    loaded = ast.literal_eval(done.stdout.splitlines()[-1])
    assert not {"numba.np.arraymath", "numba.np.linalg"} & set(loaded), loaded


def test_kernels_are_loaded_ahead_from_a_warm_cache_only(tmp_path: Path) -> None:
    """``load_kernels_ahead`` (a dataset run's first step) loads every kernel a call
    runs on its thread where the cache holds them all, and on an empty cache loads and
    compiles nothing (the run compiles what it needs, as before)."""
    ahead = (
        "import importlib\n"
        "from ragframe.postprocess import load_kernels_ahead\n"
        "from ragframe._kernels import _ahead, _preload\n"
        "load_kernels_ahead(); load_kernels_ahead()\n"
        "assert len(_preload._LOADING) == 1\n"
        "_preload._LOADING[0].join()\n"
        "files = {n: importlib.import_module(f) for n, f in _ahead.RUN_ORDER.items()}\n"
        "print([n for n in _preload.always() if getattr(getattr(files[n], n), 'signatures', [])])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), _ahead.SWITCH: "0"}
    cold = {**env, _jit.CACHE_ENV: str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", ahead], cwd=tmp_path, env=cold, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
    assert "compiling" not in done.stderr
    assert not list((tmp_path / "cache").rglob("*.nbi"))
    data = PACKAGE.parent / "data"
    warm_up = _command(
        "postprocess", str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet"),
        "-o", "blocks.parquet", "-q",
    )  # fmt: skip
    compiling = {**env, _compile.PYTHON_ROWS_ENV: "0"}  # every kernel compiled, few rows
    for code, using in ((warm_up, compiling), (ahead, env)):
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=using, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(list(_preload.always()))
    assert "compiling" not in done.stderr


def test_the_top_level_help_gives_each_command_its_own_summary() -> None:
    """:data:`ragframe.cli.COMMANDS` lists each command without importing it; its
    summary is the one the command's module declares."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    declared = {action.dest: action.help for action in sub._choices_actions}
    assert declared == {name: command.summary for name, command in cli.COMMANDS.items()}
    assert cli.named_command(["--quiet", "chunk", "postprocess"]) == ["chunk"]
    assert cli.named_command(["--help"]) == cli.named_command(["nothing"]) == []
