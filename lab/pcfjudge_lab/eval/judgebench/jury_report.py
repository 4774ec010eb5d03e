"""JudgeBench with a jury: each juror's Table 4 row (its own evaluation's numbers) beside the jury's, same columns.

Per pair, the jury's APOCJudge verdict is the weighted vote of its jurors' APOCJudge decisions
(``judging.jury.pool_verdicts``, as the service's pairwise jury); its direct verdict is the weighted vote of their
direct passes, as the service's ``direct``. A juror counts on a pair when its decision exists (an order was judged);
below the jury quorum the pair has no verdict and scores 0. Everything is read from the jurors' run logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pcfjudge.surface import apoc, jury

from pcfjudge_lab.eval.judgebench.analysis import SCORING, PairOutcome, analyse, gather
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


def _vote(verdicts: Sequence[apoc.Verdict | None], weights: Sequence[float]) -> apoc.Verdict | None:
    voted = [(v, w) for v, w in zip(verdicts, weights, strict=True) if v is not None]
    if not voted or sum(w for _, w in voted) <= 0:
        return None
    return jury.pool_verdicts([v for v, _ in voted], [w for _, w in voted])


def pooled_pair(jurors: Sequence[PairOutcome], weights: Sequence[float], needed: int) -> PairOutcome:
    """The jury's outcome on one pair from its jurors' (the same pair in every juror's log)."""
    first = jurors[0]
    kept = delivered_weights(weights, [o.apoc is not None for o in jurors], needed)
    if kept is None:
        return PairOutcome(first.pair_id, first.source, first.label, None, None, None, None, None)
    voters = [jurors[j] for j in kept[0]]
    decisions = [o.apoc for o in voters if o.apoc is not None]
    winner = jury.pool_verdicts([d.winner for d in decisions], kept[1])
    direct = _vote([o.direct for o in voters], kept[1])
    consistent = [d.order_consistent for d in decisions]
    decision = apoc.Decision(
        winner,
        direct,
        all(consistent) if all(c is not None for c in consistent) else None,
        any(d.override for d in decisions),
        "jury",
    )
    swapped = _vote([o.swapped for o in voters], kept[1])
    return PairOutcome(first.pair_id, first.source, first.label, direct, swapped, None, None, decision)


def juror_pairs(
    logs: Sequence[Sequence[Mapping[str, Any]]], pair_ids: Sequence[str]
) -> tuple[list[list[PairOutcome]], list[str]]:
    """Per juror, its outcomes on the pairs every juror completed (in ``pair_ids`` order), and the other ids."""
    gathered = [{p.pair_id: p for p in gather(lines, pair_ids)[0]} for lines in logs]
    common = [i for i in pair_ids if all(i in g for g in gathered)]
    return [[g[i] for i in common] for g in gathered], [i for i in pair_ids if i not in set(common)]


def _agreement(pairs: Sequence[Sequence[PairOutcome]]) -> dict[str, Any]:
    """Fleiss' κ of the jurors' APOCJudge verdicts over the pairs every juror decided."""
    subjects = [
        [o.apoc.winner for o in per_pair if o.apoc is not None]
        for per_pair in zip(*pairs, strict=True)
        if all(o.apoc is not None for o in per_pair)
    ]
    return {"fleiss_kappa": jury.fleiss_kappa(subjects) if len(pairs) > 1 else None, "pairs": len(subjects)}


def _row(model: str, kind: str, pairs: Sequence[PairOutcome], **extra: Any) -> dict[str, Any]:
    numbers = analyse(pairs)
    return {"model": model, "kind": kind, **extra} | {
        key: numbers[key] for key in ("n", "direct", "apocjudge", "delta_pp", "paired", "per_source")
    }


def build_jury_summary(
    spec: JurySpec,
    logs: Sequence[Sequence[Mapping[str, Any]]],
    data: str,
    command: str,
    prompt_versions: str,
    pair_ids: Sequence[str],
    found: Weighings,
    needed: int,
    out: Path,
) -> dict[str, Any]:
    """Every number of the jury report: a row per juror, then a row per weighing of the jury."""
    pairs, incomplete = juror_pairs(logs, pair_ids)
    if not pairs[0]:
        raise ValueError("no pair that every juror completed")
    rows = [
        _row(model, "juror", own, report=f"{juror_dir(out, model).name}/report.md")
        for model, own in zip(spec.jurors, pairs, strict=True)
    ]
    for weighing in found.rows:
        pooled = [pooled_pair(per_pair, weighing.weights, needed) for per_pair in zip(*pairs, strict=True)]
        rows.append(_row(f"{spec.name} ({weighing.label})", "jury", pooled, weights=weighing.label))
    return {
        "benchmark": "judgebench",
        "simulation": any_simulated(spec.jurors),
        "jury": spec.name,
        "jurors": list(spec.jurors),
        "quorum": needed,
        "calibration": found.as_dict(spec.jurors),
        "data": data,
        "scoring": SCORING,
        "n": rows[0]["n"],
        "incomplete_items": incomplete,
        "agreement": _agreement(pairs),
        "command": command,
        "prompt_versions": prompt_versions,
        "rows": rows,
    }


def render_jury_markdown(summary: Mapping[str, Any], spec: JurySpec, found: Weighings, out: Path) -> str:
    rows, agreement = summary["rows"], summary["agreement"]
    kappa = agreement["fleiss_kappa"]
    lines = ["# JudgeBench transfer: a jury beside its jurors", "", *simulation_lines(spec.jurors)]
    lines += header_lines(spec, found, summary["quorum"], out)
    lines += [
        f"- Data: `{summary['data']}`; N = {summary['n']} pairs every juror completed, "
        f"{len(summary['incomplete_items'])} incomplete (rerun the same command to finish them)",
        f"- Scoring: {summary['scoring']}. A jury's APOCJudge is the weighted vote of its jurors' APOCJudge "
        "verdicts, its Direct the weighted vote of their direct passes; two verdicts of equal weight are a tie",
        f"- Jurors' agreement: Fleiss' κ of their APOCJudge verdicts {'n/a' if kappa is None else f'{kappa:.3f}'} "
        f"over {agreement['pairs']} pairs",
        f"- Prompts: `{summary['prompt_versions'] or 'not recorded'}`; command: `{summary['command']}`",
        "",
        "## Table 4. JudgeBench (source-macro accuracy: per `source`, then the mean)",
        "",
    ]
    lines += table(
        ["Model", "N", "Direct (%)", "APOCJudge (%)", "Δ (pp)", "Micro APOCJudge (%)", "Imp./Reg.", "sign test p"],
        [
            [
                row["model"],
                row["n"],
                pct(row["direct"]["source_macro"]),
                pct(row["apocjudge"]["source_macro"]),
                delta(row["delta_pp"]),
                pct(row["apocjudge"]["micro"]),
                f"{row['paired']['improved']} / {row['paired']['regressed']}",
                p_value(row["paired"]["sign_test_p"]),
            ]
            for row in rows
        ],
    )
    lines += ["", "## Per source (APOCJudge accuracy, %)", ""]
    sources = list(rows[0]["per_source"])
    lines += table(
        ["source", "n", *[row["model"] for row in rows]],
        [
            [source, rows[0]["per_source"][source]["n"], *(pct(row["per_source"][source]["apocjudge"]) for row in rows)]
            for source in sources
        ],
    )
    lines += [
        "",
        "Each juror's position bias, cost, JudgeBench two-game metric and figure are in its own report.",
        "",
    ]
    return "\n".join(lines)
