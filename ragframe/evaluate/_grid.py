"""An experiment's grid (SPEC 8): which parameters belong to which stage, every
combination in order, and the checks made before any work.

=========  ===================================================================
stage      parameters
=========  ===================================================================
window     ``window_chars`` (also ``size``), ``overlap_chars``
retrieval  ``method``, ``k`` (the candidates kept per query), ``k1``, ``b``
context    every :class:`~ragframe.PostprocessConfig` field (``top_k``,
           ``min_similarity``, ``overlap``, the budgets, ...)
=========  ===================================================================

``overlap`` is postprocess's merge mode (``"offsets"`` or ``"text"``); the window's
overlap in characters is ``overlap_chars``.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragframe.errors import ConfigError
from ragframe.evaluate._sweep import _values
from ragframe.postprocess import PostprocessConfig
from ragframe.retrieve import RetrieveConfig
from ragframe.window import WindowConfig

WINDOW = ("window_chars", "overlap_chars")
RETRIEVAL = ("method", "k", "k1", "b")
CONTEXT = tuple(f.name for f in dataclasses.fields(PostprocessConfig))
ALIASES = {"size": "window_chars"}
STAGES = {"window": WINDOW, "retrieval": RETRIEVAL, "context": CONTEXT}
"""Each stage's grid parameters, in the order the configurations vary (window
slowest)."""
DEFAULTS: dict[str, Any] = {"window_chars": 400, "overlap_chars": 100, "overlap": "offsets"}
"""Values of parameters the grid leaves out, where they differ from the stage's own
default: the windows of the Cranfield fixture, and merging by offsets (the chunker
gives them, so overlap is removed exactly)."""
MAX_CONFIGURATIONS = 1000


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration of an experiment: its window, its retrieval (``k`` the
    candidates kept) and its context configuration."""

    window: WindowConfig
    retrieval: RetrieveConfig
    context: PostprocessConfig


def parameter_stage(name: str) -> str:
    """The stage (``window``, ``retrieval`` or ``context``) a grid parameter belongs to."""
    name = ALIASES.get(name, name)
    return next(stage for stage, names in STAGES.items() if name in names)


def settings(
    grid: Mapping[str, Any],
    retrieve_options: Mapping[str, Any] | None = None,
    max_configurations: int = MAX_CONFIGURATIONS,
) -> tuple[list[Setting], tuple[str, ...]]:
    """Every configuration of ``grid`` (parameter -> values; every combination, window
    parameters varying slowest, then retrieval, then context) and the names of the
    parameters that vary among them.

    Raises:
        ConfigError: not a mapping, an unknown parameter (with the closest names), a
            parameter without values, a value its stage refuses, or more than
            ``max_configurations`` combinations (the count is said before any work).
    """
    values = _checked(grid)
    count = 1
    for v in values.values():
        count *= len(v)
    if count > max_configurations:
        raise ConfigError(
            f"experiment grid: {count:,} configurations, more than the maximum of "
            f"{max_configurations:,}; expected fewer values, or raise the maximum "
            "(max_configurations=, --max-configurations)"
        )
    names = [n for names in STAGES.values() for n in names if n in values]
    out = [
        _setting(dict(zip(names, combo, strict=True)), retrieve_options)
        for combo in itertools.product(*(values[n] for n in names))
    ]
    varied = tuple(n for n in names if len(values[n]) > 1)
    return out, varied


def _checked(grid: object) -> dict[str, list[Any]]:
    """The grid's values per canonical parameter name."""
    if not isinstance(grid, Mapping):
        raise ConfigError(
            f"experiment grid: expected a mapping of parameter -> values, got {type(grid).__name__}"
        )
    known = [*WINDOW, *RETRIEVAL, *CONTEXT, *ALIASES]
    values: dict[str, list[Any]] = {}
    for raw, value in grid.items():
        if raw not in known:
            close = difflib.get_close_matches(str(raw), known, n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise ConfigError(
                f"experiment grid: unknown parameter {raw!r}{hint} Expected window "
                f"{list(WINDOW)}, retrieval {list(RETRIEVAL)} or context parameters "
                f"{list(CONTEXT)}"
            )
        name = ALIASES.get(str(raw), str(raw))
        if name in values:
            raise ConfigError(f"experiment grid: {name!r} is given twice ({raw!r})")
        listed = _values(str(raw), value)
        if not listed:
            raise ConfigError(f"experiment grid: {raw!r} needs at least one value, got []")
        if name == "overlap" and any(isinstance(v, int) for v in listed):
            raise ConfigError(
                f"experiment grid: 'overlap' is postprocess's merge mode ('offsets' or "
                f"'text'), got {listed!r}; the window's overlap in characters is "
                "'overlap_chars'"
            )
        values[name] = listed
    if not values:
        raise ConfigError("experiment grid: no parameters; expected at least one")
    for name, default in DEFAULTS.items():
        values.setdefault(name, [default])
    return values


def _setting(combo: dict[str, Any], retrieve_options: Mapping[str, Any] | None) -> Setting:
    """One configuration, each stage's config built (and so checked) from its part."""
    parts: dict[str, dict[str, Any]] = {stage: {} for stage in STAGES}
    for name, value in combo.items():
        parts[parameter_stage(name)][name] = value
    retrieval = {**(retrieve_options or {}), **parts["retrieval"]}
    try:
        return Setting(
            WindowConfig(**parts["window"]),
            RetrieveConfig(**retrieval),
            PostprocessConfig(**parts["context"]),
        )
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"experiment grid: {exc}") from None


def configuration_columns(setting: Setting, names: Sequence[str]) -> dict[str, Any]:
    """The values of ``names`` (grid parameters) in ``setting``, as columns."""
    sources = {"window": setting.window, "retrieval": setting.retrieval, "context": setting.context}
    return {n: _shown(getattr(sources[parameter_stage(n)], n)) for n in names}


def _shown(value: Any) -> Any:
    """A parameter's value as a column holds it (a fused method's names joined)."""
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return value
