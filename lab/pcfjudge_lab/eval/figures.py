"""PNG figures for the reports (matplotlib's object API, Agg; no pyplot global state). Legends sit at a fixed corner:
matplotlib's loc="best" times its own search and warns when a loaded machine makes it slow."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _figure(width: float, height: float) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=120, layout="constrained")


def paired_gains(path: Path, groups: Sequence[tuple[str, int, int]], title: str) -> None:
    """Paper Figure 1: per method, items improved vs regressed against the direct judge (unchanged omitted)."""
    fig = _figure(max(5.0, 1.3 * len(groups) + 2), 3.8)
    ax = fig.subplots()
    xs = range(len(groups))
    improved = [g[1] for g in groups]
    regressed = [g[2] for g in groups]
    bars_i = ax.bar([x - 0.2 for x in xs], improved, width=0.4, label="improved", color="#2a9d8f")
    bars_r = ax.bar([x + 0.2 for x in xs], regressed, width=0.4, label="regressed", color="#e76f51")
    ax.bar_label(bars_i, padding=2)
    ax.bar_label(bars_r, padding=2)
    ax.set_xticks(list(xs), [g[0] for g in groups], rotation=20, ha="right")
    ax.set_ylabel("items vs direct judge")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right")
    fig.savefig(path)


def accuracy_vs_k(
    path: Path,
    ks: Sequence[int],
    series: Sequence[tuple[str, Sequence[float]]],
    direct: float,
    title: str,
    final: tuple[str, int, float] | None = None,
) -> None:
    """Top-1 accuracy against K for each protocol, with the direct judge as a dashed line."""
    fig = _figure(5.5, 3.8)
    ax = fig.subplots()
    for (label, values), marker in zip(series, "os^v", strict=False):
        ax.plot(list(ks), list(values), marker=marker, label=label)
    ax.axhline(direct, linestyle="--", color="grey", label=f"direct (K=1) {direct:.2f}%")
    if final is not None:
        label, k, value = final
        ax.scatter([k], [value], marker="*", s=140, color="black", zorder=3, label=label)
    ax.set_xlabel("K (judge runs per execution)")
    ax.set_ylabel("top-1 accuracy (%)")
    ax.set_xticks(list(ks))
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.savefig(path)


def per_source(path: Path, sources: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], title: str) -> None:
    """Grouped bars: accuracy per JudgeBench source for each method."""
    fig = _figure(min(11.0, max(6.0, 0.55 * len(sources) + 2)), 4.5)
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar([x + offset for x in range(len(sources))], list(values), width=width, label=label)
    ax.set_xticks(list(range(len(sources))), list(sources), rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    fig.savefig(path)


def accuracy_vs_calls(
    path: Path,
    lines: Sequence[tuple[str, Sequence[tuple[str, float, float]]]],
    marks: Sequence[tuple[str, float, float]],
    title: str,
) -> None:
    """Top-1 accuracy against judge calls per item: fixed K as lines (points labelled), adaptive K as markers."""
    fig = _figure(6.0, 4.0)
    ax = fig.subplots()
    for (label, points), style in zip(lines, ["-", "--", ":"], strict=False):
        xs, ys = [p[1] for p in points], [p[2] for p in points]
        ax.plot(xs, ys, marker="o", linestyle=style, color="grey", alpha=0.8, label=label)
        for name, calls, value in points:
            ax.annotate(name.split(" ")[0], (calls, value), textcoords="offset points", xytext=(0, 6), fontsize=7)
    for (label, calls, value), marker in zip(marks, "*D^vsP", strict=False):
        ax.scatter([calls], [value], marker=marker, s=90, zorder=3, label=f"{label}: {calls:.2f} calls, {value:.2f}%")
    ax.set_xlabel("judge calls per item")
    ax.set_ylabel("top-1 accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=7)
    fig.savefig(path)
