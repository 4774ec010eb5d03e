"""Write the JudgeBench report from the run log: ``judgments.jsonl`` (JudgeBench format), ``summary.json``,
``report.md`` (paper Table 4 shape plus JudgeBench's own metric) and a per-source PNG."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcfjudge_lab.eval import bias, figures
from pcfjudge_lab.eval.accuracy import JUDGEBENCH_BUCKETS
from pcfjudge_lab.eval.judgebench.analysis import SCORING, analyse, gather
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
from pcfjudge_lab.eval.score import score_judgments_file

JUDGMENTS = "judgments.jsonl"
FIGURE = "per_source.png"


@dataclass(frozen=True)
class JbMeta:
    model: str
    data: str
    command: str
    prompt_versions: str = ""  # the pairwise and keyed prompts the passes used (PCFJ_PROMPTS, PCFJ_RATIONALES)


def build_summary(
    out_dir: Path, lines: Sequence[Mapping[str, Any]], meta: JbMeta, pair_ids: Sequence[str] | None
) -> dict[str, Any]:
    """All numbers; also writes ``judgments.jsonl`` and scores it with ``pcfjudge_lab.eval.score`` (JudgeBench's metric)."""
    pairs, incomplete = gather(lines, pair_ids)
    result = analyse(pairs)
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / JUDGMENTS).open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(pair.judgebench_record()) + "\n")
    included = {pair.pair_id for pair in pairs}
    logged = [line for line in lines if line["item"] in included]
    return {
        "benchmark": "judgebench",
        "simulation": is_simulation(meta.model),
        "model": meta.model,
        "data": meta.data,
        "scoring": SCORING,
        "incomplete_items": incomplete,
        "log": token_totals(logged),
        "command": meta.command,
        "prompt_versions": meta.prompt_versions,
        **result,
        "bias": {
            "usability": bias.usability(logged),
            "pairwise": bias.pairwise_bias(logged),
            "cost": bias.cost(logged),
        },
        "judgebench_two_game": score_judgments_file(out_dir / JUDGMENTS),
    }


def _simulation_note(model: str) -> list[str]:
    if model == "sim:oracle":
        return [
            "> The simulated oracle is told which response is labelled better and adds position bias and noise, so "
            "these accuracies measure that simulated bias, not JudgeBench's difficulty.",
            "",
        ]
    if is_simulation(model):
        return [
            f"> `{model}` has no access to the labels (it scores latent quality hashed from the text), so its "
            "accuracy is about chance by construction: use `sim:oracle` to exercise the method, a real model to "
            "measure it.",
            "",
        ]
    return []


def render_markdown(summary: Mapping[str, Any]) -> str:
    model, n = summary["model"], summary["n"]
    d, a, log, paired = summary["direct"], summary["apocjudge"], summary["log"], summary["paired"]
    proto = summary["protocol"]
    out = ["# JudgeBench transfer: APOCJudge against the direct judge", "", *simulation_banner(model)]
    out += _simulation_note(model)
    out += [
        f"- Judge: `{model}`; data: `{summary['data']}`; N = {n} pairs with every needed pass logged, "
        f"{len(summary['incomplete_items'])} incomplete (rerun the same command to finish them)",
        f"- Scoring: {summary['scoring']}",
        f"- APOCJudge: orders disagreed on {proto['order_inconsistent']} pairs; keyed pass ran on "
        f"{proto['keyed_ran']}, {proto['overrides']} override(s) accepted, {proto['keyed_skipped_estimation']} "
        f"skipped as estimation-style; {proto['failed_pairs']} pair(s) with both orders failed",
        f"- Run log: {log['lines']} passes, {log['backend_calls']} uncached backend calls, {log['failed_runs']} "
        f"failed; {log['input_tokens']:,} input / {log['output_tokens']:,} output tokens",
        f"- Prompts: `{summary.get('prompt_versions') or 'not recorded'}`; command: `{summary['command']}`",
        "",
        "## Table 4. JudgeBench (source-macro accuracy: per `source`, then the mean)",
        "",
    ]
    out += table(
        ["Model", "N", "Direct (%)", "APOCJudge (%)", "Δ (pp)"],
        [[model, n, pct(d["source_macro"]), pct(a["source_macro"]), delta(summary["delta_pp"])]],
    )
    out += [
        "",
        f"Micro accuracy: direct {pct(d['micro'])}%, APOCJudge {pct(a['micro'])}%. Paired: "
        f"{paired['improved']} improved / {paired['regressed']} regressed / {paired['unchanged']} unchanged "
        f"(exact two-sided sign test p = {p_value(paired['sign_test_p'])}).",
        "",
        *bias.render(summary),
        "## JudgeBench's own metric (game 1 = direct pass, game 2 = swapped pass; inconsistent pairs count wrong)",
        "",
    ]
    jb = summary["judgebench_two_game"]
    rows = [["overall", pct(jb["judgebench"]["overall"])]]
    rows += [[bucket, pct(jb["judgebench"][bucket])] for bucket in JUDGEBENCH_BUCKETS]
    rows += [
        ["source macro (two-game)", pct(jb["source_macro"])],
        ["single game (direct pass)", pct(jb["single_game"])],
    ]
    out += table(["JudgeBench category", "accuracy (%)"], rows)
    out += ["", f"Scored from `{JUDGMENTS}` by `pcfjudge eval score {JUDGMENTS}`.", "", "## Per source", ""]
    out += table(
        ["source", "n", "Direct (%)", "APOCJudge (%)"],
        [[s, v["n"], pct(v["direct"]), pct(v["apocjudge"])] for s, v in summary["per_source"].items()],
    )
    out += ["", f"![Accuracy per source]({FIGURE})", ""]
    return "\n".join(out)


def write_report(out_dir: Path, summary: Mapping[str, Any]) -> list[Path]:
    write_json(out_dir / "summary.json", summary)
    (out_dir / "report.md").write_text(render_markdown(summary), encoding="utf-8")
    per_source = summary["per_source"]
    tag = f"{summary['model']}{' · SIMULATION' if summary['simulation'] else ''} · N={summary['n']}"
    figures.per_source(
        out_dir / FIGURE,
        list(per_source),
        [
            ("direct", [v["direct"] for v in per_source.values()]),
            ("APOCJudge", [v["apocjudge"] for v in per_source.values()]),
        ],
        f"JudgeBench accuracy per source ({tag})",
    )
    return [out_dir / name for name in ("report.md", "summary.json", JUDGMENTS, FIGURE)]
