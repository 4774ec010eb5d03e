"""The figures of ``pcfjudge bench http`` (each beside its reference, with the issue's target) and their table."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pcfjudge_lab.bench.http_bench import PHASES


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
    """Every figure whose phases ran (``--only`` may skip some), in the table's order."""
    first = result["config"]["workers"][0]
    w1 = result[f"workers_{first}"]
    out: list[Figure] = []
    if "fanout" in w1:
        fan, alone = w1["fanout"], w1["provider_fanout"]
        out.append(
            Figure(
                "fan-out: K=7 p50 / K=1 p50, one request at a time",
                fan["k7_p50_ms"] / fan["k1_p50_ms"],
                "provider alone: 7 calls at once / 1 call",
                alone["k7_p50_ms"] / alone["k1_p50_ms"],
                "value",
                1.03,
            )
        )
    clients = {name.removeprefix("client_"): v for name, v in w1.items() if name.startswith("client_")}
    if "cold" in w1 and clients:
        out += _cold(result, w1["cold"], clients)
    if "burst_k1" in w1:
        out += _bursts(result["config"]["burst"], w1)
    if "warm_32" in w1 and "echo_32" in w1:
        out += _warm(w1)
    if "rss_mb_n" in w1:
        out.append(
            Figure(
                f"RSS after {w1['rss_requests']:,} warm requests",
                w1["rss_mb_n"],
                "after 1,000",
                w1["rss_mb_1k"],
                "ratio",
                1.10,
                unit="MiB",
            )
        )
    for workers in result["config"]["workers"][1:]:
        wn = result[f"workers_{workers}"]
        for name, key, reference, what in (
            ("warm req/s at 32 concurrent", "warm_32", "warm_32", "requests_per_s"),
            ("cold calls/s (K=7)", "cold", "cold", "calls_per_s"),
        ):
            if key in wn and reference in w1:
                out.append(
                    Figure(
                        f"--workers {workers}: {name}",
                        wn[key][what],
                        f"--workers {first}",
                        w1[reference][what],
                        "ratio",
                        None,
                    )
                )
    return out


def _cold(result: dict[str, Any], cold: dict[str, Any], clients: dict[str, Any]) -> list[Figure]:
    fastest = max(clients, key=lambda name: clients[name]["calls_per_s"])
    out = [
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
    return out


def _bursts(burst: int, w1: dict[str, Any]) -> list[Figure]:
    p64, p448 = w1[f"provider_{burst}"], w1[f"provider_{burst * 7}"]
    return [
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
    ]


def _warm(w1: dict[str, Any]) -> list[Figure]:
    return [
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
    ]


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
    notes = []
    if "cold" in w1:
        notes.append(f"provider (fake) CPU per call: {w1['cold']['provider_cpu_ms_per_call']:.2f} ms")
    if "warm_32" in w1:
        notes.append(f"warm-phase backend calls: {w1['warm_32']['backend_calls']}")
    if "echo_32" in w1:
        service, echo = w1["warm_32"]["cpu_us_per_request"], w1["echo_32"]["cpu_us_per_request"]
        notes.append(
            f"server CPU per warm request at 32 concurrent: {service:,.0f} µs, the echo's {echo:,.0f} µs "
            f"(echo / service {echo / service:.2f})"
        )
    if "warm_ratio_rounds" in w1:
        rounds = w1["warm_ratio_rounds"]
        notes.append(
            f"warm / echo req/s in {len(rounds)} alternating slices: {', '.join(f'{x:.2f}' for x in rounds)} "
            "(the table: each one's median rate)"
        )
    if c.get("only", PHASES) != list(PHASES):
        notes.append(f"phases run (--only): {','.join(c['only'])}")
    lines += ["", "; ".join(notes)]
    return "\n".join(lines)
