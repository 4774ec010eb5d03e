"""JudgeBench numbers (paper Table 4) from run-log lines alone: no I/O, no calls.

Per pair: the direct judge is the direct pass's verdict; APOCJudge's verdict is recomputed with the service's own
decision rules (``apoc.plan_keyed`` / ``apoc.decide``) from the logged pass verdicts. A verdict is correct when its
label equals the pair's label, so a tie against a strict label, or a failed judgment, counts as wrong. The paper's
figure is the source macro: accuracy within each raw ``source`` (mmlu-pro-law, livebench-math, …), then the mean.
JudgeBench's own two-game metric uses the direct pass as game 1 and the swapped pass (as judged) as game 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pcfjudge.surface import apoc

from pcfjudge_lab.eval.accuracy import accuracy, normalize_decision, paired_counts, sign_test, source_macro
from pcfjudge_lab.eval.runlog import latest_success

_KEYED_RAN = frozenset({"override_confirmed", "override_rejected", "keyed_failed"})
SCORING = "a verdict scores 1 when its label equals the pair's label; ties against a strict label and failures score 0"


@dataclass(frozen=True)
class PairOutcome:
    pair_id: str
    source: str
    label: str
    direct: apoc.Verdict | None
    swapped: apoc.Verdict | None
    swapped_raw: apoc.Verdict | None
    keyed: apoc.Verdict | None
    apoc: apoc.Decision | None

    @property
    def direct_correct(self) -> bool:
        return self.direct is not None and apoc.label(self.direct) == normalize_decision(self.label)

    @property
    def apoc_correct(self) -> bool:
        return self.apoc is not None and apoc.label(self.apoc.winner) == normalize_decision(self.label)

    def judgebench_record(self) -> dict[str, Any]:
        """This pair in JudgeBench's judgments format (game 2 judged with the responses swapped)."""
        games = [self.direct, self.swapped_raw]
        return {
            "pair_id": self.pair_id,
            "label": self.label,
            "source": self.source,
            "judgments": [None if v is None else {"decision": apoc.label(v)} for v in games],
        }


def gather(
    lines: Sequence[Mapping[str, Any]], pair_ids: Sequence[str] | None = None
) -> tuple[list[PairOutcome], list[str]]:
    """Pairs whose needed passes are all logged, and the ids of incomplete pairs."""
    by_pair: dict[str, dict[int, Mapping[str, Any]]] = {}
    for key, line in latest_success(lines).items():
        by_pair.setdefault(key[0], {})[key[3]] = line
    wanted = list(pair_ids) if pair_ids is not None else list(by_pair)
    done: list[PairOutcome] = []
    incomplete: list[str] = []
    for pair_id in wanted:
        outcome = _outcome(pair_id, by_pair.get(pair_id, {}))
        if outcome is None:
            incomplete.append(pair_id)
        else:
            done.append(outcome)
    return done, incomplete


def _verdict(line: Mapping[str, Any] | None, field: str = "verdict") -> apoc.Verdict | None:
    if line is None or line.get("error") is not None:
        return None
    value = line.get(field)
    return value if value in ("A", "B", "tie") else None


def _outcome(pair_id: str, passes: Mapping[int, Mapping[str, Any]]) -> PairOutcome | None:
    if 0 not in passes or 1 not in passes:
        return None
    first = passes[0]
    direct, swapped = _verdict(passes[0]), _verdict(passes[1])
    plan = apoc.plan_keyed(direct, swapped, enabled=True, estimation=bool(first.get("estimation")))
    if plan.run and 2 not in passes:
        return None
    keyed = _verdict(passes.get(2)) if plan.run else None
    decision = None if direct is None and swapped is None else apoc.decide(direct, swapped, keyed, plan)
    return PairOutcome(
        pair_id,
        str(first["source"]),
        str(first["label"]),
        direct,
        swapped,
        _verdict(passes[1], "raw_verdict"),
        keyed,
        decision,
    )


def _by_source(pairs: Sequence[PairOutcome], correct: Callable[[PairOutcome], bool]) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = {}
    for pair in pairs:
        out.setdefault(pair.source, []).append(bool(correct(pair)))
    return out


def analyse(pairs: Sequence[PairOutcome]) -> dict[str, Any]:
    """Source-macro and micro accuracy of direct and APOCJudge, paired counts, per-source accuracy, keyed stats."""
    if not pairs:
        raise ValueError("no complete pairs in the run log to analyse")
    direct = [p.direct_correct for p in pairs]
    apoc_ok = [p.apoc_correct for p in pairs]
    d_src = _by_source(pairs, lambda p: p.direct_correct)
    a_src = _by_source(pairs, lambda p: p.apoc_correct)
    counts = paired_counts([float(x) for x in direct], [float(x) for x in apoc_ok])
    decisions = [p.apoc for p in pairs if p.apoc is not None]
    return {
        "n": len(pairs),
        "direct": {"source_macro": source_macro(d_src), "micro": accuracy(direct)},
        "apocjudge": {"source_macro": source_macro(a_src), "micro": accuracy(apoc_ok)},
        "delta_pp": source_macro(a_src) - source_macro(d_src),
        "paired": {
            "improved": counts.improved,
            "regressed": counts.regressed,
            "unchanged": counts.unchanged,
            "sign_test_p": sign_test(counts.improved, counts.regressed),
        },
        "per_source": {
            source: {"n": len(d_src[source]), "direct": accuracy(d_src[source]), "apocjudge": accuracy(a_src[source])}
            for source in sorted(d_src)
        },
        "protocol": {
            "order_inconsistent": sum(1 for d in decisions if d.order_consistent is False),
            "keyed_ran": sum(1 for d in decisions if d.basis in _KEYED_RAN),
            "overrides": sum(1 for d in decisions if d.override),
            "keyed_skipped_estimation": sum(1 for d in decisions if d.basis == "keyed_skipped_estimation"),
            "failed_pairs": sum(1 for p in pairs if p.apoc is None),
        },
    }
