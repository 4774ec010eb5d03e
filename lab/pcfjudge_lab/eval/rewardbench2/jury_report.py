"""RewardBench 2 with a jury: each juror's rows (its own evaluation's numbers) beside the jury's, same columns.

A jury item pools, per protocol and weight preset, every juror's per-item consensus (``cons.aggregate`` over the
juror's runs the protocol picks: K=1 for direct, the K-prefix, repeated canonical, all E executions at max K for
Table 1) with ``judging.jury.pool_listwise``, the service's pooling; its winners are the pooled consensus's. No
call is made: everything is read from the jurors' run logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcfjudge.surface import consensus as cons
from pcfjudge.surface import jury

from pcfjudge_lab.eval.jury_eval import (
    JurySpec,
    Weighings,
    any_simulated,
    delivered_weights,
    header_lines,
    juror_dir,
    simulation_lines,
)
from pcfjudge_lab.eval.report_fmt import delta, p_value, pct, table
from pcfjudge_lab.eval.rewardbench2.analysis import TIE_RULE, ItemRuns, Pick, analyse, gather
from pcfjudge_lab.eval.rewardbench2.report import PRESET_NAMES, Rb2Meta


@dataclass(frozen=True)
class JuryItem:
    """One item as a jury sees it: every juror's runs, pooled with ``weights`` when ``needed`` jurors delivered."""

    jurors: tuple[ItemRuns, ...]
    weights: tuple[float, ...]
    needed: int

    @property
    def correct(self) -> str:
        return self.jurors[0].correct

    @property
    def failed_runs(self) -> int:
        return sum(j.failed_runs for j in self.jurors)

    def consensus(self, pick: Pick, weights: cons.Weights) -> cons.Consensus | None:
        """The jury's consensus of the protocol ``pick`` selects; None when fewer than ``needed`` jurors have a
        successful run in it."""
        ids = self.jurors[0].ids
        own: list[cons.Consensus | None] = []
        for juror in self.jurors:
            executions = [runs for runs in pick(juror) if runs]
            own.append(cons.aggregate(ids, executions, weights) if executions else None)
        kept = delivered_weights(self.weights, [c is not None for c in own], self.needed)
        if kept is None:
            return None
        delivered = [c for c in own if c is not None]
        return jury.pool_listwise(ids, delivered, kept[1])

    def winners_by(self, pick: Pick, weights: cons.Weights) -> list[str]:
        pooled = self.consensus(pick, weights)
        return pooled.winners if pooled is not None else []


def juror_items(
    logs: Sequence[Sequence[Mapping[str, Any]]], meta: Rb2Meta, item_ids: Sequence[str]
) -> tuple[list[list[ItemRuns]], list[str]]:
    """Per juror, its complete items among those every juror completed (in ``item_ids`` order), and the ids of
    items some juror has not completed."""
    max_k = max(meta.ks)
    gathered = [
        {it.item: it for it in gather(lines, max_k=max_k, executions=meta.executions, item_ids=item_ids)[0]}
        for lines in logs
    ]
    common = [i for i in item_ids if all(i in g for g in gathered)]
    for item_id in common:
        ids = {tuple(g[item_id].ids) for g in gathered}
        if len(ids) > 1:
            raise ValueError(
                f"the jurors saw item {item_id}'s candidates in different orders: run them with one --seed"
            )
    return [[g[i] for i in common] for g in gathered], [i for i in item_ids if i not in set(common)]


def _agreement(items: Sequence[Sequence[ItemRuns]], max_k: int, executions: int) -> dict[str, Any]:
    """Kendall's W of the jurors' final consensus (max K, every execution), per item, averaged."""
    values = []
    for per_juror in zip(*items, strict=True):
        scores = []
        for it in per_juror:
            runs = [r for r in it.pcf(max_k, executions) if r]
            if runs:
                pooled = cons.aggregate(it.ids, runs, cons.PRESETS["proposed"])
                scores.append({cid: c.consensus for cid, c in pooled.candidates.items()})
        if len(scores) == len(per_juror) and (w := jury.kendalls_w(scores)) is not None:
            values.append(w)
    return {"mean_kendalls_w": round(sum(values) / len(values), 4) if values else None, "items": len(values)}


def build_jury_summary(
    spec: JurySpec,
    logs: Sequence[Sequence[Mapping[str, Any]]],
    meta: Rb2Meta,
    item_ids: Sequence[str],
    found: Weighings,
    needed: int,
    out: Path,
) -> dict[str, Any]:
    """Every number of the jury report: a row per juror, then a row per weighing of the jury."""
    max_k = max(meta.ks)
    items, incomplete = juror_items(logs, meta, item_ids)
    if not items[0]:
        raise ValueError("no item that every juror completed")
    rows: list[dict[str, Any]] = []
    for model, own in zip(spec.jurors, items, strict=True):
        numbers = analyse(own, ks=meta.ks, max_k=max_k, executions=meta.executions)
        report = f"{juror_dir(out, model).name}/report.md"
        rows.append({"model": model, "kind": "juror", "report": report, **numbers})
    for weighing in found.rows:
        pooled = [JuryItem(per_item, weighing.weights, needed) for per_item in zip(*items, strict=True)]
        numbers = analyse(pooled, ks=meta.ks, max_k=max_k, executions=meta.executions)
        label = f"{spec.name} ({weighing.label})"
        rows.append({"model": label, "kind": "jury", "weights": weighing.label, **numbers})
    return {
        "benchmark": "rewardbench2-factuality",
        "simulation": any_simulated(spec.jurors),
        "jury": spec.name,
        "jurors": list(spec.jurors),
        "quorum": needed,
        "calibration": found.as_dict(spec.jurors),
        "data": meta.data,
        "seed": meta.seed,
        "schedule_seed": meta.schedule_seed,
        "ks": list(meta.ks),
        "max_k": max_k,
        "executions": meta.executions,
        "tie_rule": TIE_RULE,
        "n": rows[0]["n"],
        "incomplete_items": incomplete,
        "agreement": _agreement(items, max_k, meta.executions),
        "command": meta.command,
        "prompt_version": meta.prompt_version,
        "rows": rows,
    }


def render_jury_markdown(summary: Mapping[str, Any], spec: JurySpec, found: Weighings, out: Path) -> str:
    n, ks, rows = summary["n"], summary["ks"], summary["rows"]
    agreement = summary["agreement"]
    w = agreement["mean_kendalls_w"]
    lines = ["# RewardBench 2 Factuality: a jury beside its jurors", "", *simulation_lines(spec.jurors)]
    lines += header_lines(spec, found, summary["quorum"], out)
    lines += [
        f"- Data: `{summary['data']}` (seed {summary['seed']}); N = {n} items every juror completed, "
        f"{len(summary['incomplete_items'])} incomplete (rerun the same command to finish them)",
        f"- PCFJudge: K ∈ {{{', '.join(map(str, ks))}}} per juror (schedule seed {summary['schedule_seed']}), "
        f"{summary['executions']} execution(s); weights 0.50/0.25/0.20/0.05 unless noted. Ties: {summary['tie_rule']}",
        f"- Jurors' agreement: mean Kendall's W of their final consensus "
        f"{'n/a' if w is None else f'{w:.3f}'} over {agreement['items']} items",
        f"- Prompt: `{summary['prompt_version'] or 'not recorded'}`; command: `{summary['command']}`",
        "",
        f"## Table 1. Main result (K={summary['max_k']} per juror, {summary['executions']} execution(s) aggregated)",
        "",
    ]
    lines += table(
        ["Model", "N", "Direct (%)", "PCFJudge (%)", "Δ (pp)", "Imp./Reg.", "Same", "sign test p"],
        [
            [
                row["model"],
                row["n"],
                pct(row["direct"]["accuracy"]),
                pct(row["final"]["accuracy"]),
                delta(row["final"]["delta_pp"]),
                f"{row['final']['improved']} / {row['final']['regressed']}",
                row["final"]["unchanged"],
                p_value(row["final"]["sign_test_p"]),
            ]
            for row in rows
        ],
    )
    lines += [
        "",
        "A jury's Direct pools its jurors' direct judges (run 0, canonical order); its PCFJudge pools their consensus.",
        "",
        "## Table 2. Diagnostic controls (execution 0 only; Δ against each row's direct)",
        "",
    ]
    diagnostic = []
    for row in rows:
        for key, label in (("repeated_canonical", "repeated canonical"), ("pcfjudge", "PCFJudge")):
            cells = row["diagnostic"][key]
            diagnostic.append(
                [
                    row["model"],
                    label,
                    *(f"{pct(cells[str(k)]['accuracy'])} ({delta(cells[str(k)]['delta_pp'])})" for k in ks),
                ]
            )
    lines += table(["Model", "Protocol", *[f"K={k} (%)" for k in ks]], diagnostic, "ll" + "r" * len(ks))
    lines += ["", f"## Table 3. Weight sensitivity (K={summary['max_k']}, execution 0)", ""]
    presets = list(rows[0]["weights"])
    weights = [
        [
            PRESET_NAMES.get(name, name),
            *(f"{rows[0]['weights'][name]['weights'][k]:.2f}" for k in ("score", "borda", "top_vote", "uncertainty")),
            *(pct(row["weights"][name]["accuracy"]) for row in rows),
        ]
        for name in presets
    ]
    lines += table(["Variant", "w_s", "w_B", "w_v", "w_u", *[f"{row['model']} (%)" for row in rows]], weights)
    lines += [
        "",
        "Each juror's position bias, cost and figures are in its own report; the jury makes no call of its own.",
        "",
    ]
    return "\n".join(lines)
