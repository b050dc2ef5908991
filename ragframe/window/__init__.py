"""window: fixed-size character windows with overlap (SPEC section 3, seed doctruth
``SlidingWindow``), one lazy Polars plan.

Where each rule of SPEC section 3 lives:

=====================================  ================================================
Parameters (window, overlap)           :mod:`._config` (:class:`WindowConfig`)
Render sections, join with "\\n\\n"    :mod:`._sections` (``_render_section``)
Single window (the seed)               :mod:`._sections` (:func:`assemble`)
Multi-window, offsets                  :mod:`._sections` (:func:`windows`)
The chunker over raw documents         :mod:`._chunk` (:func:`chunk`)
Window starts, ends and texts          :mod:`._slide` (numpy kernel, string views)
=====================================  ================================================

Lengths and offsets are Unicode code points. The seed counts Java UTF-16 units; the two
agree on all text without characters outside the Basic Multilingual Plane.
"""

from __future__ import annotations

from ragframe.window._chunk import chunk
from ragframe.window._config import WindowConfig
from ragframe.window._sections import SECTION_SEPARATOR, assemble, windows

__all__ = ["SECTION_SEPARATOR", "WindowConfig", "assemble", "chunk", "windows"]
