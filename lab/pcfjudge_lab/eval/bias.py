"""Position bias, usability and cost per judgment, from run-log lines alone (no I/O, no calls).

Both reports carry this section: it is what a real judge shows that a simulated one cannot.

* **Usable runs**: logged calls that gave a judgment (``error`` is None), of all logged; truncated answers counted
  apart, with the largest output a call produced.
* **Position bias, listwise** (RewardBench 2, the PCFJudge permutation runs: every order a candidate is shown in):
  how often the candidate displayed first was the run's sole top-ranked one, against the 1/n of a judge that ignores
  order, with an exact two-sided binomial test over the runs with a single top candidate.
* **Position bias, pairwise** (JudgeBench, the direct and swapped passes): how often the response shown first won,
  against 1/2 (exact two-sided sign test over the decisive passes), and order consistency: the pairs whose two
  passes gave the same verdict once mapped back, of the pairs with both passes judged.
* **Cost**: input and output tokens and latency per uncached call (from its start: time spent waiting for a free
  backend slot under ``PCFJ_BACKEND_CONCURRENCY`` counts, so it is what a caller waits, not engine time), and per
  judgment (an item's calls: on RewardBench 2 its K permutation runs, what one PCFJudge request costs; on JudgeBench
  every pass of its APOCJudge decision). A judgment's calls run concurrently, so its wall time is shorter than its
  summed call-seconds.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from math import comb
from typing import Any

from pcfjudge_lab.eval.accuracy import sign_test

LISTWISE_PROTOCOL = "consensus"  # the permutation runs; repeated-canonical runs always show one order
PAIRWISE_PASSES = ("direct", "swapped")


def binomial_test(successes: int, trials: int, p: Fraction) -> float:
    """Exact two-sided binomial test: P(outcomes no more likely than the observed one), X ~ Bin(trials, p)."""
    if trials == 0:
        return 1.0
    probs = [comb(trials, i) * p**i * (1 - p) ** (trials - i) for i in range(trials + 1)]
    observed = probs[successes]
    return float(min(Fraction(1), sum((q for q in probs if q <= observed), Fraction(0))))


def usability(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Usable runs, truncated answers and the largest output of any call."""
    failed = [line for line in lines if line.get("error") is not None]
    outputs = [int((line.get("usage") or {}).get("output_tokens", 0)) for line in lines if not line.get("cached")]
    return {
        "runs": len(lines),
        "usable": len(lines) - len(failed),
        "usable_pct": 100.0 * (len(lines) - len(failed)) / len(lines) if lines else None,
        "failed_kinds": _kinds(failed),
        "truncated": sum(1 for line in failed if "truncat" in str(line["error"]).lower()),
        "max_output_tokens": max(outputs, default=0),
    }


def _kinds(failed: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    kinds: dict[str, int] = defaultdict(int)
    for line in failed:
        kinds[str(line["error"]).split(":", 1)[0].strip() or "error"] += 1
    return dict(kinds)


def listwise_bias(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Top-ranked candidate by displayed position over the permutation runs (see the module docstring)."""
    runs = [
        line
        for line in lines
        if line.get("protocol") == LISTWISE_PROTOCOL and line.get("error") is None and line.get("judgments")
    ]
    by_position: dict[int, float] = defaultdict(float)
    decisive = first = 0
    sizes = set()
    for line in runs:
        order: list[str] = list(line["order"])
        ranks = {cid: float(j["rank"]) for cid, j in line["judgments"].items()}
        best = min(ranks.values())
        top = [cid for cid in order if ranks.get(cid) == best]
        sizes.add(len(order))
        for cid in top:
            by_position[order.index(cid)] += 1 / len(top)
        if len(top) == 1:
            decisive += 1
            first += top[0] == order[0]
    n = sizes.pop() if len(sizes) == 1 else None  # the chance rate needs one candidate count
    chance = Fraction(1, n) if n else None
    return {
        "runs": len(runs),
        "candidates": n,
        "top_by_position_pct": [100.0 * by_position[i] / len(runs) for i in range(n or 0)] if runs else [],
        "decisive_runs": decisive,
        "first_on_top": first,
        "first_on_top_pct": 100.0 * first / decisive if decisive else None,
        "chance_pct": 100.0 * float(chance) if chance else None,
        "p": binomial_test(first, decisive, chance) if chance else None,
    }


def pairwise_bias(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """First-shown win rate and order consistency over the direct and swapped passes."""
    passes = [line for line in lines if line.get("pass") in PAIRWISE_PASSES and line.get("error") is None]
    first = sum(1 for line in passes if line.get("raw_verdict") == "A")
    second = sum(1 for line in passes if line.get("raw_verdict") == "B")
    verdicts: dict[str, dict[str, str]] = defaultdict(dict)
    for line in passes:
        if line.get("verdict") is not None:
            verdicts[str(line["item"])][str(line["pass"])] = str(line["verdict"])
    both = [v for v in verdicts.values() if len(v) == 2]
    consistent = sum(1 for v in both if v["direct"] == v["swapped"])
    return {
        "passes": len(passes),
        "first_wins": first,
        "second_wins": second,
        "first_win_pct": 100.0 * first / (first + second) if first + second else None,
        "p": sign_test(first, second),
        "pairs_both_passes": len(both),
        "order_consistent": consistent,
        "order_consistency_pct": 100.0 * consistent / len(both) if both else None,
    }


def cost(lines: Sequence[Mapping[str, Any]], protocol: str | None = None) -> dict[str, Any]:
    """Tokens and seconds per uncached call and per judgment (an item's calls of ``protocol``, or all of them,
    together)."""
    calls = [line for line in lines if not line.get("cached") and protocol in (None, line.get("protocol"))]
    per_item: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for line in calls:
        per_item[str(line["item"])].append(line)

    def usage(line: Mapping[str, Any], field: str) -> int:
        return int((line.get("usage") or {}).get(field, 0))

    def mean(values: Sequence[float]) -> float | None:
        return statistics.fmean(values) if values else None

    seconds = [float(line.get("latency_ms", 0.0)) / 1000 for line in calls]
    return {
        "calls": len(calls),
        "judgments": len(per_item),
        "calls_per_judgment": mean([len(v) for v in per_item.values()]),
        "input_tokens_per_call": mean([usage(line, "input_tokens") for line in calls]),
        "output_tokens_per_call": mean([usage(line, "output_tokens") for line in calls]),
        "seconds_per_call": mean(seconds),
        "seconds_per_call_p50": statistics.median(seconds) if seconds else None,
        "input_tokens_per_judgment": mean([sum(usage(x, "input_tokens") for x in v) for v in per_item.values()]),
        "output_tokens_per_judgment": mean([sum(usage(x, "output_tokens") for x in v) for v in per_item.values()]),
        "call_seconds_per_judgment": mean(
            [sum(float(x.get("latency_ms", 0.0)) for x in v) / 1000 for v in per_item.values()]
        ),
    }


def render(summary: Mapping[str, Any]) -> list[str]:
    """The report section for a summary's ``bias`` block (empty when there is none)."""
    block = summary.get("bias")
    if not block:
        return []
    use, spend = block["usability"], block["cost"]
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(use["failed_kinds"].items())) or "none"
    out = [
        "## Position bias and cost per judgment",
        "",
        f"- Usable runs: {use['usable']} of {use['runs']} ({_pct(use['usable_pct'])}%); failed: {kinds}; "
        f"truncated {use['truncated']}; largest output {use['max_output_tokens']} tokens",
    ]
    if "listwise" in block:
        lw = block["listwise"]
        shares = " / ".join(f"{_pct(v)}" for v in lw["top_by_position_pct"])
        out.append(
            f"- Top-ranked candidate by displayed position (%, first to last; {lw['runs']} permutation runs): "
            f"{shares}. Shown first and sole top: {lw['first_on_top']} of {lw['decisive_runs']} decisive runs "
            f"({_pct(lw['first_on_top_pct'])}% against a chance {_pct(lw['chance_pct'])}%; exact binomial "
            f"p = {_p(lw['p'])})"
        )
    if "pairwise" in block:
        pw = block["pairwise"]
        out.append(
            f"- Response shown first won {pw['first_wins']} of {pw['first_wins'] + pw['second_wins']} decisive "
            f"passes ({_pct(pw['first_win_pct'])}% against 50%; sign test p = {_p(pw['p'])}); order consistency "
            f"{pw['order_consistent']} of {pw['pairs_both_passes']} pairs ({_pct(pw['order_consistency_pct'])}%)"
        )
    timing = not summary.get("simulation")  # a simulated judge's microseconds say nothing (and vary run to run)
    latency = (
        f", {_num(spend['seconds_per_call'], 2)} s latency (p50 {_num(spend['seconds_per_call_p50'], 2)} s; from "
        "the call's start, so waiting for a free backend slot counts)"
        if timing
        else ""
    )
    seconds = f", {_num(spend['call_seconds_per_judgment'], 1)} call-seconds" if timing else ""
    out.append(
        f"- Per uncached call: {_num(spend['input_tokens_per_call'])} input / {_num(spend['output_tokens_per_call'])} "
        f"output tokens{latency}. Per judgment ({_num(spend['calls_per_judgment'], 1)} calls): "
        f"{_num(spend['input_tokens_per_judgment'])} input / {_num(spend['output_tokens_per_judgment'])} output "
        f"tokens{seconds}"
    )
    return [*out, ""]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _num(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"
