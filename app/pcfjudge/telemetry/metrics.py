"""Prometheus metrics: service health, backend calls, cache, and the judge's own order bias.

Defined once at module level with bounded labels: route templates (never raw paths), provider, a model label taken
from configuration (any other model is "other"), outcome. Every judgment's metrics also carry its ``door`` (a door's
name, as ``pcfjudge.doors.door_list`` declares it: listwise, pairwise, rerank, reward, chat) and ``mode`` (now,
stream, job: ``MODES``), named together in a ``Door``. Under ``pcfjudge serve --workers N`` the CLI prepares
``PROMETHEUS_MULTIPROC_DIR`` before any worker starts; ``render()`` then aggregates every worker's files, and each
worker's start removes the files of workers that have died.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)
from prometheus_client.openmetrics import exposition as openmetrics

from pcfjudge._version import __version__
from pcfjudge.telemetry import tracing
from pcfjudge.types import Usage

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: less noise for dashboards
CONTENT_TYPE = CONTENT_TYPE_LATEST
LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
SHARE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MARGIN_BUCKETS = (0.5, 1, 2, 5, 10, 20, 40, 100)

DoorName = str
"""A door's name as its declaration gives it (``http.door_spec.DoorSpec.name``): bounded by the door list."""
Mode = Literal["now", "stream", "job"]
MODES: tuple[Mode, ...] = ("now", "stream", "job")


@dataclass(frozen=True, slots=True)
class Door:
    """Where a judgment came in, as its metrics label it: the route template (``endpoint``), the door (``name``:
    listwise, pairwise, rerank, reward or chat, whatever the route's wire shape) and how it is answered (``mode``:
    ``now``, ``stream`` for server-sent events, ``job`` for a job's judgment, run in process)."""

    endpoint: str
    name: DoorName
    mode: Mode = "now"


DOOR = ["door", "mode"]

REQUESTS = Counter("pcfjudge_requests_total", "HTTP requests by route template and status", ["endpoint", "status"])
REQUEST_SECONDS = Histogram(
    "pcfjudge_request_duration_seconds", "HTTP request latency", ["endpoint"], buckets=LLM_BUCKETS
)
KEY_REQUESTS = Counter(
    "pcfjudge_requests_by_key_total",
    "HTTP requests by API key name (anonymous without keys) and status class",
    ["key", "code"],
)
IN_FLIGHT = Gauge(
    "pcfjudge_requests_in_flight", "HTTP requests being served", ["endpoint"], multiprocess_mode="livesum"
)
BACKEND_CALLS = Counter("pcfjudge_backend_calls_total", "Backend calls by outcome", ["provider", "model", "outcome"])
BACKEND_SECONDS = Histogram(
    "pcfjudge_backend_call_duration_seconds", "Backend call latency", ["provider", "model"], buckets=LLM_BUCKETS
)
RETRIES = Counter("pcfjudge_backend_retries_total", "Backend call retries by reason", ["provider", "model", "reason"])
TOKENS = Counter("pcfjudge_tokens_total", "Tokens used by kind (input, output, cached)", ["provider", "model", "kind"])
COST = Counter(
    "pcfjudge_cost_usd_total",
    "Spend in USD from the configured price table, by the judgments' door and mode",
    ["provider", "model", *DOOR],
)
CACHE_LOOKUPS = Counter("pcfjudge_cache_lookups_total", "Cache lookups by layer and result", ["layer", "result"])
SINGLE_FLIGHT = Counter("pcfjudge_single_flight_waits_total", "Calls that waited for an identical call in flight")
FLIGHT_ALONE = Counter(
    "pcfjudge_single_flight_unavailable_calls_total",
    "Backend calls made while the shared (cross-replica) single flight was unavailable: Redis failed or its breaker "
    "was open, so other replicas may have made the same call",
)
FLIGHT_DUPLICATES = Counter(
    "pcfjudge_single_flight_duplicates_total",
    "Answers stored that were stored already (outside a refresh): backend calls made twice for one key",
)
BREAKER = Gauge(
    "pcfjudge_cache_breaker_open",
    "Redis circuit breaker: 0 closed, 0.5 half open, 1 open",
    multiprocess_mode="max",
)
TOP_PICKS = Counter(
    "pcfjudge_top_pick_position_total",
    "Runs' top picks by displayed position (0 = shown first); an unbiased judge is flat across positions",
    ["endpoint", *DOOR, "position"],
)
JUROR_TOP_PICKS = Counter(
    "pcfjudge_juror_top_pick_position_total",
    "A jury's runs' top picks by juror and displayed position (0 = shown first): each juror's position bias",
    ["model", "position", *DOOR],
)
JUROR_OUTCOMES = Counter(
    "pcfjudge_juror_judgments_total",
    "Jurors' judgments within juries by outcome (delivered, failed: the jury answered without it or failed)",
    ["model", "outcome", *DOOR],
)
JURY_AGREEMENT = Histogram(
    "pcfjudge_jury_agreement",
    "A jury's agreement: Kendall's W of its jurors' rankings (listwise) or Fleiss' kappa of their verdicts (pairwise)",
    ["statistic", *DOOR],
    buckets=(-0.5, 0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0),
)
DECISIONS = Counter(
    "pcfjudge_decisions_total",
    "Judging decisions by endpoint, door, mode (now, stream, job) and method (consensus, direct, repeated_canonical, "
    "apoc, chat: a framework's own prompt in every order, chat_passthrough: one not recognised)",
    ["endpoint", *DOOR, "method"],
)
OVERTURNS = Counter(
    "pcfjudge_consensus_overturns_total",
    "Decisions whose consensus winner differs from the direct verdict",
    ["endpoint", *DOOR],
)
AGREEMENT = Histogram(
    "pcfjudge_run_agreement", "Share of runs whose top pick is a consensus winner", DOOR, buckets=SHARE_BUCKETS
)
MARGIN = Histogram(
    "pcfjudge_consensus_margin", "Consensus points between winner and runner-up", DOOR, buckets=MARGIN_BUCKETS
)
JUDGMENT_SECONDS = Histogram(
    "pcfjudge_judgment_duration_seconds",
    "Time to a judgment (delivered, partial included; failures are pcfjudge_failed_requests_total) by door and mode",
    DOOR,
    buckets=LLM_BUCKETS,
)
STOPS = Counter(
    "pcfjudge_listwise_stops_total",
    'Listwise requests with "k": "auto" or a budget, by why their runs stopped (certified, confident, k_max, budget)',
    ["reason"],
)
WINDOWED = Counter(
    "pcfjudge_windowed_judgments_total",
    "Judgments past one window (rounds of windows), by why their rounds stopped (rounds, certified, budget, failed)",
    ["stopped"],
)
ROUNDS = Counter(
    "pcfjudge_window_rounds_total",
    "Rounds of windows finished (judgments past one window), as each round ends: a long judgment's progress",
)
WINDOWS_JUDGED = Histogram(
    "pcfjudge_windows_per_judgment",
    "Windows (backend calls or cache hits) one judgment past one window took",
    buckets=(2, 4, 8, 16, 32, 64, 128, 256, 512),
)
PAIR_INCONSISTENT = Counter(
    "pcfjudge_pairwise_order_inconsistent_total", "Pairwise decisions whose two orders disagreed"
)
KEYED = Counter(
    "pcfjudge_keyed_passes_total", "Keyed passes by outcome (run, skipped_estimation, skipped_disabled)", ["outcome"]
)
OVERRIDES = Counter("pcfjudge_pairwise_overrides_total", "Order-based overrides accepted after keyed confirmation")
FAILED = Counter(
    "pcfjudge_failed_requests_total",
    "Judgments that failed (a 5xx for the request; a reward group's samples get none)",
    ["endpoint", *DOOR, "reason"],
)
DEGRADED = Counter("pcfjudge_degraded_requests_total", "Judgments answered with failed runs", ["endpoint", *DOOR])
REWARD_GROUPS = Counter(
    "pcfjudge_reward_groups_total",
    "Collected reward groups by how they closed (full, timeout, takeover) or fell back to in-process (fallback)",
    ["closed"],
)
BUILD = Gauge(
    "pcfjudge_build_info",
    "Build and prompt versions",
    ["version", "listwise_prompt", "pairwise_prompt", "keyed_prompt"],
    multiprocess_mode="max",
)
JUDGE_LABELS = ["model", "prompt_version"]
JUDGE_ACCURACY = Gauge(
    "pcfjudge_judge_accuracy",
    "Calibration: share of the pinned slice's items whose consensus winner was the gold answer (pcfjudge calibrate)",
    JUDGE_LABELS,
    multiprocess_mode="livemostrecent",
)
JUDGE_ORDER_CONSISTENCY = Gauge(
    "pcfjudge_judge_order_consistency",
    "Calibration: share of items whose K runs all put the same top set first",
    JUDGE_LABELS,
    multiprocess_mode="livemostrecent",
)
JUDGE_FIRST_POSITION = Gauge(
    "pcfjudge_judge_first_position_win_rate",
    "Calibration: share of successful runs whose top choice was the candidate shown first",
    JUDGE_LABELS,
    multiprocess_mode="livemostrecent",
)
JUDGE_DRIFT = Gauge(
    "pcfjudge_judge_drift",
    "Calibration drift against the slice's baseline: 1 when the measure's shift is significant and past the threshold",
    [*JUDGE_LABELS, "measure"],
    multiprocess_mode="livemostrecent",
)
JUDGE_DRIFT_P = Gauge(
    "pcfjudge_judge_drift_p_value",
    "Calibration drift: the p-value of the measure's test against the baseline (McNemar, two-proportion z)",
    [*JUDGE_LABELS, "measure"],
    multiprocess_mode="livemostrecent",
)
SLOT_WAIT_SECONDS = Histogram(
    "pcfjudge_slot_wait_seconds", "Backend calls' wait for a call slot by class", ["provider", "class"],
    buckets=(0.001, 0.005, 0.025, *LLM_BUCKETS),
)  # fmt: skip
FLEET = ["fleet", "endpoint"]  # a fleet's model_name and an endpoint's id: both from PCFJ_MODELS_FILE (bounded)
FLEET_OUTSTANDING = Gauge(
    "pcfjudge_fleet_outstanding_calls", "Calls in flight per fleet endpoint", FLEET, multiprocess_mode="livesum"
)
FLEET_CALLS = Counter(
    "pcfjudge_fleet_calls_total",
    "Calls per fleet endpoint by outcome (ok, rate_limited: 429/503/529, provider_error, timeout, cancelled, …)",
    [*FLEET, "outcome"],
)
FLEET_SECONDS = Histogram(
    "pcfjudge_fleet_call_duration_seconds", "Call latency per fleet endpoint", FLEET, buckets=LLM_BUCKETS
)
FLEET_WAITS = Counter(
    "pcfjudge_fleet_budget_waits_total",
    "Times a call found no fleet endpoint with budget and waited (reason of the soonest: rpm, tpm, parallel, blocked)",
    [*FLEET, "reason"],
)
FLEET_WAIT_SECONDS = Histogram(
    "pcfjudge_fleet_budget_wait_seconds",
    "How long calls that waited for rate budget waited",
    ["fleet"],
    buckets=LLM_BUCKETS,
)
FLEET_SHED = Counter(
    "pcfjudge_fleet_shed_total", "Calls refused (503) with no budget before their deadline", ["fleet", "reason"]
)
FLEET_COOLDOWNS = Counter(
    "pcfjudge_fleet_cooldowns_total", "Fleet endpoints cooled down after repeated failures", FLEET
)
FLEET_HEALTHY = Gauge(
    "pcfjudge_fleet_endpoint_healthy",
    "1: the fleet endpoint takes calls; 0: cooling down",
    FLEET,
    multiprocess_mode="min",
)
FLEET_BLOCKED = Gauge(
    "pcfjudge_fleet_endpoint_blocked_until_seconds",
    "Unix time until which a rate limit (Retry-After, x-ratelimit-reset-*) blocks the fleet endpoint; blocked while it "
    "is later than time()",
    FLEET,
    multiprocess_mode="max",
)
JudgeRow = tuple[str, str, float, float, float, Mapping[str, tuple[bool, float | None]]]
"""(model, prompt version, accuracy, order consistency, first-position win rate, measure → (drift, p-value))."""
_JUDGE_SHOWN: set[tuple[str, str]] = set()

_BREAKER_VALUES = {"closed": 0.0, "half_open": 0.5, "open": 1.0}
M = TypeVar("M", Counter, Gauge, Histogram)
_CHILDREN: dict[tuple[Any, tuple[str, ...]], Any] = {}


def child(metric: M, *labels: str) -> M:
    """``metric.labels(*labels)``, looked up in prometheus_client once per label set (its lookup validates the labels
    and takes a lock: several times the cost of the update itself). Label sets are bounded (module docstring)."""
    key = (metric, labels)
    found: M | None = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*labels)
    return found


class Metrics:
    """The Observer the judging layer reports to, plus recording helpers for routes."""

    def __init__(self, known_models: Iterable[str] = ()) -> None:
        self.known_models = set(known_models)

    def model_label(self, model: str) -> str:
        return model if model in self.known_models else "other"

    # Observer protocol (telemetry.hooks)
    def backend_call(self, model: str, outcome: str, seconds: float, usage: Usage | None) -> None:
        provider, label = model.partition(":")[0], self.model_label(model)
        child(BACKEND_CALLS, provider, label, outcome).inc()
        child(BACKEND_SECONDS, provider, label).observe(seconds, tracing.exemplar())  # the call's span, if traced
        if usage is not None:
            for kind, value in (
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
                ("cached", usage.cached_tokens),
            ):
                if value:
                    child(TOKENS, provider, label, kind).inc(value)

    def retry(self, model: str, kind: str) -> None:
        child(RETRIES, model.partition(":")[0], self.model_label(model), kind).inc()

    def single_flight_wait(self) -> None:
        SINGLE_FLIGHT.inc()

    def single_flight_alone(self) -> None:
        FLIGHT_ALONE.inc()

    def single_flight_duplicate(self) -> None:
        FLIGHT_DUPLICATES.inc()

    def cache_lookup(self, layer: str, result: str, n: int) -> None:
        if n:
            child(CACHE_LOOKUPS, layer, result).inc(n)

    def cache_breaker(self, state: str) -> None:
        BREAKER.set(_BREAKER_VALUES.get(state, 1.0))

    def judgment_event(self, kind: str, data: dict[str, Any]) -> None:
        """The metrics a judgment's events move as it runs (``Judge.run`` reports them): a round of windows
        finished; how a judgment stopped (listwise early stops; past one window, why its rounds ended)."""
        if kind == "round":
            ROUNDS.inc()
        elif kind == "stopped":
            reason = str(data.get("reason"))
            if "windows_judged" in data:
                child(WINDOWED, reason).inc()
                WINDOWS_JUDGED.observe(data["windows_judged"])
            elif data.get("judgment") == "listwise" and reason not in ("planned", "failed"):
                child(STOPS, reason).inc()

    def slot_wait(self, model: str, priority: str, seconds: float) -> None:
        child(SLOT_WAIT_SECONDS, model.partition(":")[0], priority).observe(seconds)

    # Route-level recording
    def cost(self, model: str, usd: float | None, door: Door) -> None:
        """Add a judgment's cost to its provider's, model's, door's and mode's counter (``model``: provider:model)."""
        if usd:
            child(COST, model.partition(":")[0], self.model_label(model), door.name, door.mode).inc(usd)


def jury(
    metrics: Metrics,
    jurors: Iterable[tuple[str, bool, float | None]],
    agreement: Mapping[str, float],
    door: Door,
) -> None:
    """Each juror's (model, delivered, cost) and the jury's agreement statistics (kendalls_w, fleiss_kappa)."""
    for model, delivered, usd in jurors:
        outcome = "delivered" if delivered else "failed"
        child(JUROR_OUTCOMES, metrics.model_label(model), outcome, door.name, door.mode).inc()
        metrics.cost(model, usd, door)
    for statistic, value in agreement.items():
        child(JURY_AGREEMENT, statistic, door.name, door.mode).observe(value)


def juror_top_pick(metrics: Metrics, model: str, position: int, door: Door, share: float = 1.0) -> None:
    child(JUROR_TOP_PICKS, metrics.model_label(model), str(position), door.name, door.mode).inc(share)


def build_info(listwise: str, pairwise: str, keyed: str) -> None:
    BUILD.labels(__version__, listwise, pairwise, keyed).set(1)


def judge_reliability(rows: Iterable[JudgeRow]) -> None:
    """Set the calibration gauges to these records (the latest per model and prompt version); series of records no
    longer loaded are removed. Labels are bounded by what the operator calibrates."""
    shown: set[tuple[str, str]] = set()
    for model, version, accuracy, consistency, first_position, drift in rows:
        shown.add((model, version))
        JUDGE_ACCURACY.labels(model, version).set(accuracy)
        JUDGE_ORDER_CONSISTENCY.labels(model, version).set(consistency)
        JUDGE_FIRST_POSITION.labels(model, version).set(first_position)
        for measure, (drifted, p_value) in drift.items():
            JUDGE_DRIFT.labels(model, version, measure).set(1.0 if drifted else 0.0)
            if p_value is not None:
                JUDGE_DRIFT_P.labels(model, version, measure).set(p_value)
            else:
                with contextlib.suppress(KeyError):
                    JUDGE_DRIFT_P.remove(model, version, measure)
    for model, version in _JUDGE_SHOWN - shown:
        for gauge in (JUDGE_ACCURACY, JUDGE_ORDER_CONSISTENCY, JUDGE_FIRST_POSITION):
            with contextlib.suppress(KeyError):
                gauge.remove(model, version)
        for gauge in (JUDGE_DRIFT, JUDGE_DRIFT_P):
            for measure in ("accuracy", "first_position_win_rate"):
                with contextlib.suppress(KeyError):
                    gauge.remove(model, version, measure)
    _JUDGE_SHOWN.clear()
    _JUDGE_SHOWN.update(shown)


def fleet_outstanding(fleet: str, endpoint: str, change: int) -> None:
    child(FLEET_OUTSTANDING, fleet, endpoint).inc(change)


def fleet_call(fleet: str, endpoint: str, outcome: str, seconds: float) -> None:
    child(FLEET_CALLS, fleet, endpoint, outcome).inc()
    child(FLEET_SECONDS, fleet, endpoint).observe(seconds)


def fleet_wait(fleet: str, endpoint: str, reason: str) -> None:
    child(FLEET_WAITS, fleet, endpoint, reason).inc()


def fleet_waited(fleet: str, seconds: float) -> None:
    child(FLEET_WAIT_SECONDS, fleet).observe(seconds)


def fleet_shed(fleet: str, reason: str) -> None:
    child(FLEET_SHED, fleet, reason).inc()


def fleet_cooldown(fleet: str, endpoint: str) -> None:
    child(FLEET_COOLDOWNS, fleet, endpoint).inc()
    child(FLEET_HEALTHY, fleet, endpoint).set(0)


def fleet_blocked(fleet: str, endpoint: str, until_unix: float) -> None:
    child(FLEET_BLOCKED, fleet, endpoint).set(until_unix)


def fleet_healthy(fleet: str, endpoint: str, healthy: bool) -> None:
    child(FLEET_HEALTHY, fleet, endpoint).set(1 if healthy else 0)


def multiprocess_dir() -> Path | None:
    value = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(value) if value else None


def clean_dead_workers() -> None:
    """Remove live-gauge files of worker processes that no longer exist (called at each worker start)."""
    directory = multiprocess_dir()
    if directory is None:
        return
    for child in directory.glob("*.db"):
        pid_text = child.stem.rsplit("_", 1)[-1]
        if pid_text.isdigit() and not _alive(int(pid_text)):
            multiprocess.mark_process_dead(int(pid_text), str(directory))  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def render() -> bytes:
    """The exposition text: this process's registry, or every worker's files in multiprocess mode."""
    if multiprocess_dir() is not None:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest()


OPENMETRICS = "application/openmetrics-text"


def render_for(accept: str) -> tuple[bytes, str]:
    """The exposition and its content type for a scraper's ``Accept`` header: OpenMetrics, which carries the latency
    histograms' trace exemplars, when it names ``application/openmetrics-text`` (as Prometheus does); else the
    Prometheus text format. Multiprocess mode (``--workers N``) has no exemplars: always the text format there."""
    if OPENMETRICS in accept and multiprocess_dir() is None:
        body: bytes = openmetrics.generate_latest(REGISTRY)  # type: ignore[no-untyped-call]
        return body, openmetrics.CONTENT_TYPE_LATEST
    return render(), CONTENT_TYPE
