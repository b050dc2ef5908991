"""The package's shape at the level of its packages: the cross-cutting ones (reading and
writing, tokens, the kernel machinery) sit below the stages, any module can be the first
one imported, and no module is over 400 lines."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.test_layout import GRAPH, MODULES, PACKAGE

CROSS_CUTTING = ("ragframe.io", "ragframe.tokens", "ragframe._kernels")
"""Packages every stage may use, which use no stage."""
FLAT = ("ragframe.schema", "ragframe.errors", "ragframe._arrow", "ragframe._validate")
"""The flat modules beside them (column names, errors, Arrow buffers, config checks)."""
MAX_LINES = 400
GENERATED = {"ragframe.fetch._wordbreak_data"}
"""Generated data, exempt from :data:`MAX_LINES`."""
BEING_SPLIT = {"ragframe.postprocess._kernels._merge"}
"""Modules over :data:`MAX_LINES` whose split is under way elsewhere (issue 27's floor
work splits the merge kernels); remove each once it is split."""


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
    assert set(over) - GENERATED - BEING_SPLIT == set(), over


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
