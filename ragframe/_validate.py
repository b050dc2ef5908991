"""Parameter checks shared by every stage's frozen config.

The seeds silently clamp out-of-range values; ragframe rejects them with a
:class:`~ragframe.errors.ConfigError` that names the parameter, the value and the
allowed range.
"""

from __future__ import annotations

import math

from ragframe.errors import ConfigError


def check_int(name: str, value: object, low: int) -> None:
    """Raise unless ``value`` is an int (not a bool) and ``value >= low``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    if value < low:
        raise ConfigError(f"{name} must be >= {low}, got {value}")


def check_unit_float(name: str, value: object) -> None:
    """Raise unless ``value`` is a real number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be in [0, 1], got {value}")
