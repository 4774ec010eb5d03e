"""Small formatting helpers shared by the evaluation reports (markdown cells, p-values, simulation banner)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pcfjudge.surface import Usage


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def delta(value: float) -> str:
    value = round(value, 2)
    return f"{value + 0.0:+.2f}"  # + 0.0 turns -0.0 into 0.0


def p_value(p: float) -> str:
    return f"{p:.1e}" if p < 0.001 else f"{p:.4f}"


def table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> list[str]:
    """Markdown table lines; ``align`` has one of l/r per column (default: first left, rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    out += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return out


def is_simulation(model: str) -> bool:
    return model.startswith("sim:")


def simulation_banner(model: str) -> list[str]:
    if not is_simulation(model):
        return []
    return [
        f"> **SIMULATION.** Judged by the simulated judge `{model}`, not a language model. These numbers show the "
        "harness and the method's mechanics on a judge with a known position bias; they are not the paper's results.",
        "",
    ]


def token_totals(lines: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Logged lines, uncached backend calls, failed runs and token totals."""
    count = backend_calls = failed_runs = 0
    usage = Usage()
    for line in lines:
        count += 1
        backend_calls += not line.get("cached")
        failed_runs += line.get("error") is not None
        usage += Usage.from_dict(line.get("usage"))
    return {
        "lines": count,
        "backend_calls": backend_calls,
        "failed_runs": failed_runs,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
