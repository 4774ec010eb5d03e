"""The figures of ``pcfjudge bench http`` (each beside its reference, with the issue's target) and their table."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    service: float
    reference_name: str
    reference: float
    compare: str  # what the target is checked on: "ratio" (service / reference), "diff" (service − reference), "value"
    target: float | None  # the bound on ``compare``; None: shown without a target
    at_most: bool = True  # the target is an upper bound (else a lower bound)
    unit: str = ""

    @property
    def ratio(self) -> float:
        return self.service / self.reference if self.reference else float("inf")

    @property
    def checked(self) -> float:
        return {"ratio": self.ratio, "diff": self.service - self.reference, "value": self.service}[self.compare]

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.checked <= self.target if self.at_most else self.checked >= self.target

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "met": self.met}


def figures(result: dict[str, Any]) -> list[Figure]:
    first = result["config"]["workers"][0]
    w1 = result[f"workers_{first}"]
    fan, cold = w1["fanout"], w1["cold"]
    clients = {name.removeprefix("client_"): v for name, v in w1.items() if name.startswith("client_")}
    fastest = max(clients, key=lambda name: clients[name]["calls_per_s"])
    burst = result["config"]["burst"]
    p64, p448 = w1[f"provider_{burst}"], w1[f"provider_{burst * 7}"]
    alone = w1["provider_fanout"]
    out = [
        Figure(
            "fan-out: K=7 p50 / K=1 p50, one request at a time",
            fan["k7_p50_ms"] / fan["k1_p50_ms"],
            "provider alone: 7 calls at once / 1 call",
            alone["k7_p50_ms"] / alone["k1_p50_ms"],
            "value",
            1.03,
        ),
        Figure(
            f"calls/s, cold K=7 × {result['config']['cold_concurrency']} concurrent",
            cold["calls_per_s"],
            f"fastest client alone ({fastest})",
            clients[fastest]["calls_per_s"],
            "ratio",
            0.95,
            at_most=False,
        ),
    ]
    out += [
        Figure(
            "client CPU per backend call",
            cold["cpu_ms_per_call"],
            f"{name} alone",
            v["cpu_ms_per_call"],
            "value",
            1.0,
            unit="ms",
        )
        for name, v in clients.items()
    ]
    out += [
        Figure(
            f"{burst} concurrent K=1: p50",
            w1["burst_k1"]["p50_ms"],
            f"provider alone, {burst} concurrent",
            p64["p50_ms"],
            "diff",
            20.0,
            unit="ms",
        ),
        Figure(
            f"{burst} concurrent K=1: p99",
            w1["burst_k1"]["p99_ms"],
            f"provider alone, {burst} concurrent",
            p64["p99_ms"],
            "ratio",
            None,
            unit="ms",
        ),
        Figure(
            f"{burst} concurrent K=7: p50",
            w1["burst_k7"]["p50_ms"],
            f"provider alone, {burst} concurrent",
            p64["p50_ms"],
            "ratio",
            None,
            unit="ms",
        ),
        Figure(
            f"{burst} concurrent K=7: p99",
            w1["burst_k7"]["p99_ms"],
            f"provider alone, {burst} concurrent",
            p64["p99_ms"],
            "ratio",
            2.0,
            unit="ms",
        ),
        Figure(
            f"{burst} concurrent K=7: p99",
            w1["burst_k7"]["p99_ms"],
            f"provider alone, {burst * 7} concurrent",
            p448["p99_ms"],
            "ratio",
            None,
            unit="ms",
        ),
        Figure(
            "warm hits: req/s at 32 concurrent",
            w1["warm_32"]["requests_per_s"],
            "bare FastAPI echo",
            w1["echo_32"]["requests_per_s"],
            "ratio",
            0.5,
            at_most=False,
        ),
        Figure(
            "warm hits: p50 at concurrency 1",
            w1["warm_1"]["p50_ms"],
            "bare FastAPI echo",
            w1["echo_1"]["p50_ms"],
            "value",
            1.0,
            unit="ms",
        ),
        Figure(
            f"RSS after {w1['rss_requests']:,} warm requests",
            w1["rss_mb_n"],
            "after 1,000",
            w1["rss_mb_1k"],
            "ratio",
            1.10,
            unit="MiB",
        ),
    ]
    for workers in result["config"]["workers"][1:]:
        wn = result[f"workers_{workers}"]
        out += [
            Figure(
                f"--workers {workers}: warm req/s at 32 concurrent",
                wn["warm_32"]["requests_per_s"],
                f"--workers {first}",
                w1["warm_32"]["requests_per_s"],
                "ratio",
                None,
            ),
            Figure(
                f"--workers {workers}: cold calls/s (K=7)",
                wn["cold"]["calls_per_s"],
                f"--workers {first}",
                cold["calls_per_s"],
                "ratio",
                None,
            ),
        ]
    return out


def _target(f: Figure) -> str:
    if f.target is None:
        return ""
    sign = "≤" if f.at_most else "≥"
    what = {"ratio": "ratio", "diff": "+", "value": ""}[f.compare]
    return f"{what} {sign} {f.target:g}{' ' + f.unit if f.compare != 'ratio' else ''}".strip()


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def format_report(result: dict[str, Any]) -> str:
    m = result["machine"]
    c = result["config"]
    load = "/".join(f"{x:.2f}" for x in m["load_average_start"])
    lines = [
        f"pcfjudge bench http: fake provider at {c['latency_ms']:g} ms per call, {c['candidates']} candidates, "
        f"PCFJ_BACKEND_CONCURRENCY={c['backend_concurrency']}; {m['cores']} cores, load average {load} at the "
        f"start, {'/'.join(f'{x:.2f}' for x in m['load_average_end'])} at the end",
        "",
        "| figure | service | reference | reference value | ratio | target | met |",
        "|---|---:|---|---:|---:|---|---|",
    ]
    for f in figures(result):
        met = "" if f.met is None else ("yes" if f.met else "no")
        lines.append(
            f"| {f.name} | {_num(f.service)}{' ' + f.unit if f.unit else ''} | {f.reference_name} | "
            f"{_num(f.reference)} | {f.ratio:.2f} | {_target(f)} | {met} |"
        )
    w1 = result[f"workers_{c['workers'][0]}"]
    lines += [
        "",
        f"provider (fake) CPU per call: {w1['cold']['provider_cpu_ms_per_call']:.2f} ms; "
        f"warm-phase backend calls: {w1['warm_32']['backend_calls']}",
    ]
    return "\n".join(lines)
