"""Point labels that overlap no other label: each tried at a few offsets around its
point, kept at the first where it stays inside the axes and clear of the labels placed
so far, dropped when none fits. Points drawn on the same spot share one label."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

OFFSETS = ((5, 5), (5, -13), (-10, 8), (-12, -14), (8, 16), (8, -24), (-22, 18), (-22, -26))
"""Where a label goes, in points from its point: right above first."""
SAME_SPOT = 3.0
"""Points closer than this (in pixels) share a label."""


def place_labels(
    figure: Any, axes: Any, points: Sequence[tuple[float, float, object]]
) -> list[Any]:
    """Label ``points`` (x, y, text) on ``axes``, in order, none overlapping another;
    returns the labels kept. Lay the figure out first: the labels are placed where the
    figure draws them now."""
    figure.canvas.draw()  # fixes the layout, so that label positions are final
    renderer = figure.canvas.get_renderer()
    inside = axes.get_window_extent(renderer)
    spots: list[tuple[float, float, float, float, list[str]]] = []
    for x, y, text in points:
        px, py = axes.transData.transform((x, y))
        for spot in spots:
            if abs(spot[2] - px) <= SAME_SPOT and abs(spot[3] - py) <= SAME_SPOT:
                spot[4].append(str(text))
                break
        else:
            spots.append((x, y, px, py, [str(text)]))
    placed: list[Any] = []
    boxes: list[Any] = []
    for x, y, _, _, texts in spots:
        for dx, dy in OFFSETS:
            label = axes.annotate(
                ", ".join(texts), (x, y), xytext=(dx, dy), textcoords="offset points",
                fontsize="small", bbox={"boxstyle": "round,pad=0.15", "fc": "white",
                "ec": "none", "alpha": 0.8},
            )  # fmt: skip
            box = label.get_window_extent(renderer)
            fits = inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)
            if fits and not any(box.overlaps(other) for other in boxes):
                placed.append(label)
                boxes.append(box)
                break
            label.remove()
    return placed
