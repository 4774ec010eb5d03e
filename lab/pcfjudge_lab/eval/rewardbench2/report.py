"""Write the RewardBench 2 report from the run log: ``summary.json``, ``report.md`` (Tables 1–3, position bias and cost,
and adaptive K with ``--k auto``) and the PNGs (``accuracy_vs_calls.png`` with ``--k auto``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pcfjudge_lab.eval import bias, figures
from pcfjudge_lab.eval.report_fmt import (
    delta,
    is_simulation,
    p_value,
    pct,
    simulation_banner,
    table,
    token_totals,
    write_json,
)
from pcfjudge_lab.eval.rewardbench2 import adaptive_k
from pcfjudge_lab.eval.rewardbench2.analysis import TIE_RULE, analyse, gather

PRESET_NAMES = {
    "proposed": "Proposed",
    "uniform": "Uniform",
    "score_only": "Score only",
    "rank_only": "Rank only",
    "top_vote_only": "Top vote only",
    "no_uncertainty": "No uncertainty",
    "score_rank": "Score/rank",
    "score_top": "Score/top",
}
FIGURE_GAINS = "paired_gains.png"
FIGURE_K = "accuracy_vs_k.png"
FIGURE_CALLS = "accuracy_vs_calls.png"


@dataclass(frozen=True)
class Rb2Meta:
    model: str
    data: str
    ks: tuple[int, ...]
    executions: int
    seed: int
    schedule_seed: int
    command: str
    auto_k_min: int | None = None  # --k auto: compare adaptive K from this k_min (None: not asked for)
    prompt_version: str = ""  # the listwise prompt the runs used (PCFJ_PROMPTS, PCFJ_RATIONALES)


def build_summary(lines: Sequence[Mapping[str, Any]], meta: Rb2Meta, item_ids: Sequence[str] | None) -> dict[str, Any]:
    """Every reported number, from the log lines of ``item_ids`` (all logged items when None)."""
    max_k = max(meta.ks)
    items, incomplete = gather(lines, max_k=max_k, executions=meta.executions, item_ids=item_ids)
    included = {item.item for item in items}
    logged = [line for line in lines if line["item"] in included]
    result = analyse(items, ks=meta.ks, max_k=max_k, executions=meta.executions)
    if meta.auto_k_min is not None:
        compare = partial(adaptive_k.compare, items, ks=meta.ks, k_min=meta.auto_k_min, k_max=max_k)
        result["adaptive"] = [compare(executions=e) for e in sorted({1, meta.executions})]
    return {
        "benchmark": "rewardbench2-factuality",
        "simulation": is_simulation(meta.model),
        "model": meta.model,
        "data": meta.data,
        "seed": meta.seed,
        "schedule_seed": meta.schedule_seed,
        "ks": list(meta.ks),
        "max_k": max_k,
        "executions": meta.executions,
        "tie_rule": TIE_RULE,
        "incomplete_items": incomplete,
        "log": token_totals(logged),
        "command": meta.command,
        "prompt_version": meta.prompt_version,
        **result,
        "bias": {
            "usability": bias.usability(logged),
            "listwise": bias.listwise_bias(logged),
            "cost": bias.cost(logged, bias.LISTWISE_PROTOCOL),
        },
    }


def render_markdown(summary: Mapping[str, Any]) -> str:
    model, n, ks = summary["model"], summary["n"], summary["ks"]
    final, direct = summary["final"], summary["direct"]["accuracy"]
    log = summary["log"]
    out = ["# RewardBench 2 Factuality: PCFJudge against the direct judge", "", *simulation_banner(model)]
    out += [
        f"- Judge: `{model}`; data: `{summary['data']}` (candidates shuffled with seed {summary['seed']}; "
        f"the correct answer's position is recorded per item)",
        f"- N = {n} items with every planned run logged; {len(summary['incomplete_items'])} incomplete "
        "(rerun the same command to finish them)",
        f"- PCFJudge: K ∈ {{{', '.join(map(str, ks))}}} (permutation schedule seed {summary['schedule_seed']}, "
        f"run 0 = canonical order), {summary['executions']} execution(s); weights 0.50/0.25/0.20/0.05 unless noted",
        f"- Ties: {summary['tie_rule']}. Mean winners per item: direct {summary['direct']['mean_winners']:.2f}, "
        f"PCFJudge {final['mean_winners']:.2f}",
        f"- Run log: {log['lines']} runs, {log['backend_calls']} uncached backend calls, {log['failed_runs']} failed; "
        f"{log['input_tokens']:,} input / {log['output_tokens']:,} output tokens",
        f"- Prompt: `{summary.get('prompt_version') or 'not recorded'}`; command: `{summary['command']}`",
        "",
        f"## Table 1. Main result (K={final['k']}, {final['executions']} execution(s) aggregated)",
        "",
    ]
    out += table(
        ["Model", "N", "Direct (%)", "PCFJudge (%)", "Δ (pp)", "Imp./Reg.", "Same", "sign test p"],
        [
            [
                model,
                n,
                pct(direct),
                pct(final["accuracy"]),
                delta(final["delta_pp"]),
                f"{final['improved']} / {final['regressed']}",
                final["unchanged"],
                p_value(final["sign_test_p"]),
            ]
        ],
    )
    out += ["", "p: exact two-sided sign test over the discordant items (improved vs regressed).", ""]
    out += [
        f"## Table 2. Diagnostic controls (execution 0 only; Δ against direct {pct(direct)}%)",
        "",
    ]
    diag = summary["diagnostic"]
    rows = [
        [model, label] + [f"{pct(diag[key][str(k)]['accuracy'])} ({delta(diag[key][str(k)]['delta_pp'])})" for k in ks]
        for key, label in (("repeated_canonical", "repeated canonical"), ("pcfjudge", "PCFJudge"))
    ]
    out += table(["Model", "Protocol", *[f"K={k} (%)" for k in ks]], rows, "ll" + "r" * len(ks))
    out += ["", f"## Table 3. Weight sensitivity (K={summary['max_k']}, execution 0; direct {pct(direct)}%)", ""]
    weight_rows = []
    for name, entry in summary["weights"].items():
        w = entry["weights"]
        weight_rows.append(
            [
                PRESET_NAMES.get(name, name),
                *(f"{w[key]:.2f}" for key in ("score", "borda", "top_vote", "uncertainty")),
                f"{pct(entry['accuracy'])} ({delta(entry['delta_pp'])})",
            ]
        )
    out += table(["Variant", "w_s", "w_B", "w_v", "w_u", f"{model} (%)"], weight_rows)
    out += ["", *bias.render(summary)]
    if "adaptive" in summary:
        out += adaptive_k.render(summary["adaptive"], model)
    out += [
        "## Figures",
        "",
        f"![Paired gains against the direct judge]({FIGURE_GAINS})",
        "",
        f"![Top-1 accuracy against K]({FIGURE_K})",
        "",
    ]
    if "adaptive" in summary:
        out += [f"![Top-1 accuracy against judge calls per item]({FIGURE_CALLS})", ""]
    return "\n".join(out)


def write_report(out_dir: Path, summary: Mapping[str, Any]) -> list[Path]:
    """Write summary.json, report.md and the figures into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "summary.json", summary)
    (out_dir / "report.md").write_text(render_markdown(summary), encoding="utf-8")
    tag = f"{summary['model']}{' · SIMULATION' if summary['simulation'] else ''} · N={summary['n']}"
    final, diag = summary["final"], summary["diagnostic"]
    groups = [(f"PCFJudge K={final['k']} ×{final['executions']}", final["improved"], final["regressed"])]
    groups += [
        (f"PCFJudge K={k}", diag["pcfjudge"][str(k)]["improved"], diag["pcfjudge"][str(k)]["regressed"])
        for k in summary["ks"]
    ]
    groups += [
        (
            f"repeated K={k}",
            diag["repeated_canonical"][str(k)]["improved"],
            diag["repeated_canonical"][str(k)]["regressed"],
        )
        for k in summary["ks"]
    ]
    figures.paired_gains(out_dir / FIGURE_GAINS, groups, f"Paired changes vs direct judge ({tag})")
    curve = summary["k_curve"]
    figures.accuracy_vs_k(
        out_dir / FIGURE_K,
        curve["k"],
        [("PCFJudge (permutations)", curve["pcfjudge"]), ("repeated canonical", curve["repeated_canonical"])],
        summary["direct"]["accuracy"],
        f"Top-1 accuracy vs K ({tag})",
        final=(f"PCFJudge K={final['k']}, {final['executions']} executions", final["k"], final["accuracy"]),
    )
    names = ["report.md", "summary.json", FIGURE_GAINS, FIGURE_K]
    if "adaptive" in summary:
        lines, marks = adaptive_k.figure_series(summary["adaptive"])
        title = f"Top-1 accuracy vs judge calls per item ({tag})"
        figures.accuracy_vs_calls(out_dir / FIGURE_CALLS, lines, marks, title)
        names.append(FIGURE_CALLS)
    return [out_dir / name for name in names]
