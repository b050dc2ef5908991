"""The package's shape at the level of its packages: the cross-cutting ones (reading and
writing, tokens, the kernel machinery) sit below the stages, any module can be the first
one imported, and no module is over 400 lines."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.test_layout import GRAPH, MODULES, PACKAGE, find_cycle

CROSS_CUTTING = ("ragframe.io", "ragframe.tokens", "ragframe._kernels")
"""Packages every stage may use, which use no stage."""
FLAT = (
    "ragframe.schema",
    "ragframe.errors",
    "ragframe._arrow",
    "ragframe._validate",
    "ragframe._progress",
)
"""The flat modules beside them (column names, errors, Arrow buffers, config checks,
progress bars)."""
MAX_LINES = 400
GENERATED = {"ragframe.fetch._wordbreak_data"}
"""Generated data, exempt from :data:`MAX_LINES`."""


def _below(module: str) -> bool:
    """Whether ``module`` is cross-cutting (see :data:`CROSS_CUTTING`, :data:`FLAT`)."""
    return module in FLAT or any(module == p or module.startswith(p + ".") for p in CROSS_CUTTING)


def test_the_cross_cutting_packages_import_no_stage() -> None:
    """Data flows down: ``io``, ``tokens`` and the kernel machinery import only each other
    and the flat modules, never a stage (whose modules import them)."""
    for name, imported in GRAPH.items():
        if _below(name):
            above = {m for m in imported if not _below(m) and m != "ragframe"}
            assert not above, f"{name} imports {sorted(above)}"


def test_the_layering_check_finds_a_stage_import() -> None:
    assert _below("ragframe.io._sources") and _below("ragframe.schema")
    assert not _below("ragframe.postprocess._kernels._merge")
    assert not _below("ragframe.iox")


def test_no_module_is_over_400_lines() -> None:
    over = {
        name: len(path.read_text().splitlines())
        for name, path in MODULES.items()
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert set(over) - GENERATED == set(), over


def test_each_module_imports_first() -> None:
    """Each module imported first, in a fresh set of ragframe modules, imports: a module
    that imports a package whose ``__init__`` imports it back (the import cycle that
    :func:`~tests.test_layout.test_the_import_graph_has_no_cycle`, module by module,
    cannot see) fails here. (Command entry points, ``__main__``, are left out: they run.)"""
    names = sorted(m for m in MODULES if not m.endswith("__main__"))
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] == 'ragframe']:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"ragframe.io._sources", "ragframe.tokens._kernels._count"} <= set(names)


def package_of(module: str) -> str:
    """The package ``module`` belongs to: ``ragframe.<first part>`` (a subpackage or a
    top-level module); the root itself is ``ragframe``."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` (module -> modules it imports, at any level: top, function, type checking)
    collapsed to packages, without the root (``ragframe/__init__`` re-exports every stage)
    and without a package's imports of itself."""
    packages: dict[str, set[str]] = {}
    for name, imported in graph.items():
        if name == "ragframe":
            continue
        own = package_of(name)
        above = {package_of(m) for m in imported if m != "ragframe"} - {own}
        packages.setdefault(own, set()).update(above)
    return packages


def package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (first node repeated last) per group of packages that import each other
    round, found by removing each cycle's closing edge and looking again."""
    left = {name: set(edges) for name, edges in graph.items()}
    cycles: list[list[str]] = []
    while (cycle := find_cycle(left)) is not None:
        cycles.append(cycle)
        left[cycle[-2]].discard(cycle[-1])
    return cycles


BEING_UNTANGLED: set[tuple[str, str]] = set()
"""Package cycles whose untangling is under way (the engines' shared partition contract
and inputs move out of ``distributed`` into ``driver``); remove each once it is done."""


def test_the_package_graph_has_no_cycle() -> None:
    """Grouped by package (stages, engines, shared packages, top-level modules), imports
    go one way: a package never imports, even inside a function, one that imports it."""
    packages = package_graph(GRAPH)
    for importer, imported in BEING_UNTANGLED:
        packages[imported].discard(importer)
    cycles = package_cycles(packages)
    assert not cycles, "package import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_package_check_finds_cycles() -> None:
    modules = {
        "ragframe": {"ragframe.a"},
        "ragframe.a": {"ragframe.b._x", "ragframe"},
        "ragframe.a._y": {"ragframe.a"},
        "ragframe.b._x": {"ragframe.b._z"},
        "ragframe.b._z": set(),
    }
    assert package_graph(modules) == {"ragframe.a": {"ragframe.b"}, "ragframe.b": set()}
    assert package_cycles(package_graph(modules)) == []
    modules["ragframe.b._z"] = {"ragframe.a._y"}
    assert package_cycles(package_graph(modules)) == [["ragframe.a", "ragframe.b", "ragframe.a"]]
    three = {"a": {"b"}, "b": {"c", "a"}, "c": {"a"}}
    assert package_cycles(three) == [["a", "b", "a"], ["a", "b", "c", "a"]]
