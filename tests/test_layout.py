"""The package's shape: no import cycles, an independent reference, self-contained
kernel files, and a compiled-kernel cache that cannot go stale."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import ragframe
from ragframe.postprocess._kernels import _compile

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


def test_kernel_files_import_only_kernel_files_and_the_arrow_reader() -> None:
    """Everything compiled is in the files the cache key hashes."""
    kernels = "ragframe.postprocess._kernels"
    for name, imported in GRAPH.items():
        if name.startswith(kernels + "."):
            outside = {m for m in imported if not m.startswith(kernels) and m != "ragframe._arrow"}
            assert not outside, f"{name} imports {sorted(outside)}"
    arrow = ast.dump(ast.parse(MODULES["ragframe._arrow"].read_text()))
    assert "numba" not in arrow  # read at run time only, never compiled


def test_the_cache_key_changes_with_any_kernel_file(tmp_path: Path) -> None:
    """Editing a constant in one kernel file (MIN_OVERLAP, read by another file's
    kernels) changes the key, so nothing compiled before is reused."""
    copy = tmp_path / "kernels"
    shutil.copytree(_compile.KERNELS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _compile.sources_hash(copy)
    assert before == _compile.sources_hash(_compile.KERNELS)
    overlap = copy / "_overlap.py"
    text = overlap.read_text()
    assert "MIN_OVERLAP = 20" in text
    overlap.write_text(text.replace("MIN_OVERLAP = 20", "MIN_OVERLAP = 21"))
    assert _compile.sources_hash(copy) != before
    (copy / "_overlap.py").write_text(text)
    (copy / "_new.py").write_text("X = 1\n")
    assert _compile.sources_hash(copy) != before
    assert _compile.cache_key().endswith(before)


def test_the_cache_lives_in_a_per_user_folder_outside_the_package(tmp_path: Path) -> None:
    """A kernel compiled in a fresh process lands under RAGFRAME_CACHE_DIR/<key>, and
    nothing is written into the package (an install or uninstall leaves nothing)."""
    assert _compile.LOCATOR_INSTALLED
    env = {**os.environ, _compile.CACHE_ENV: str(tmp_path)}
    code = (
        "import numpy as np\n"
        "from ragframe.postprocess._kernels import _compile, _order\n"
        "starts = np.array([True, False, True]); keys = np.array([[2], [1], [0]])\n"
        "print(_order.ordered_in_segments(starts, keys).tolist())\n"
        "print(_compile.cache_folder())\n"
    )
    before = set(PACKAGE.rglob("*.nbi"))
    run = [sys.executable, "-c", code]
    done = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    order, folder = done.stdout.splitlines()
    assert order == "[1, 0, 2]"
    assert Path(folder) == tmp_path / _compile.cache_key()
    assert any(Path(folder).glob("_order.ordered_in_segments-*.nbi"))
    assert set(PACKAGE.rglob("*.nbi")) == before
    # the user is told while it compiles, and only then: the second run loads it
    assert done.stderr.count("ragframe: compiling kernels, first run only") == 1
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert again.stdout == done.stdout
    assert "compiling" not in again.stderr
