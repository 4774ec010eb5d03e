"""What ``pcfjudge calibrate`` prints: the models' figures, their error correlations and their drift (plain text)."""

from __future__ import annotations

from collections.abc import Sequence

from pcfjudge.surface import MCNEMAR, Reliability, Shift, error_correlation

from pcfjudge_lab.calibrate.pinned import PinnedSlice

MEASURE_NAMES = {"accuracy": "accuracy", "first_position_win_rate": "first-position win rate"}
TEST_NAMES = {MCNEMAR: "McNemar exact"}


def percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def p_text(p: float) -> str:
    return "p < 0.0001" if p < 0.0001 else f"p = {p:.4f}"


def _grid(rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """Columns two spaces apart, each left- ("l") or right-aligned ("r") as ``align`` says."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align, strict=True)).rstrip()
        for row in rows
    ]


def state(record: Reliability) -> str:
    if record.baseline_at is None:
        return "baseline"
    drifted = [MEASURE_NAMES[s.measure] for s in record.drift if s.drift]
    return f"DRIFT ({', '.join(drifted)})" if drifted else "stable"


def figures(records: Sequence[Reliability]) -> list[str]:
    rows = [["model", "accuracy", "order consistency", "first-position win rate", "runs", "drift"]]
    for r in records:
        rows.append(
            [
                r.model,
                f"{percent(r.accuracy)} ({r.correct}/{r.items})",
                percent(r.order_consistency),
                percent(r.first_position_win_rate),
                str(r.runs),
                state(r),
            ]
        )
    return _grid(rows, "lrrrrl")


def correlations(records: Sequence[Reliability]) -> list[str]:
    """Every pair's error correlation (phi of the 0/1 per-item errors); n/a when a model was never or always wrong."""
    rows = [["", *(r.model for r in records)]]
    for a in records:
        cells = []
        for b in records:
            rho = 1.0 if a is b else error_correlation(a, b)
            cells.append("n/a" if rho is None else f"{rho:.3f}")
        rows.append([a.model, *cells])
    return _grid(rows, "l" + "r" * len(records))


def shift_line(model: str, shift: Shift) -> list[str]:
    test = TEST_NAMES.get(shift.test, "two-proportion z")
    return [
        model,
        MEASURE_NAMES[shift.measure],
        f"{percent(shift.baseline)} -> {percent(shift.current)}",
        f"{shift.points:+.1f} points",
        f"{test} {p_text(shift.p_value)}",
        "DRIFT" if shift.drift else "within bounds",
    ]


def drift_section(records: Sequence[Reliability], alpha: float, min_points: float) -> list[str]:
    rows = [shift_line(r.model, s) for r in records for s in r.drift]
    head = f"Drift against each model's baseline (drift: p < {alpha:g} and a shift of more than {min_points:g} points)"
    new = [r.model for r in records if r.baseline_at is None]
    lines = [head + ":"]
    if rows:
        lines += ["  " + line for line in _grid(rows, "llrrll")]
    if new:
        lines.append(f"  new baseline: {', '.join(new)} (later runs on this slice are compared with it)")
    return lines


def render(pinned: PinnedSlice, version: str, records: Sequence[Reliability], alpha: float, min_points: float) -> str:
    head = (
        f"Calibration on {pinned.name}: {len(pinned.items)} items ({pinned.rewardbench2} RewardBench 2, "
        f"{pinned.judgebench} JudgeBench), K={pinned.k}, prompt {version}"
    )
    lines = [head, "", *figures(records)]
    if len(records) > 1:
        lines += [
            "",
            "Error correlation (phi of the per-item errors):",
            *("  " + line for line in correlations(records)),
        ]
    lines += ["", *drift_section(records, alpha, min_points)]
    return "\n".join(lines)
