"""Service settings, read from ``PCFJ_*`` environment variables (and the providers' own key/URL variables)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from pcfjudge.types import MAX_K, OutputMode

ENV_PREFIX = "PCFJ_"


class Group(BaseModel):
    """One group of settings: a section of docs/operations/settings.md, read by the modules that need it."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)


class ModelSelection(Group):
    """Model selection."""

    default_model: str | None = Field(
        default=None,
        description="Model used when a request names none; unset: the keyed provider's default, else sim.",
    )
    openai_default_model: str = "gpt-5.4"
    anthropic_default_model: str = "claude-sonnet-4-6"


class RequestLimits(Group):
    """Request limits."""

    min_candidates: int = Field(2, ge=2)
    max_candidates: int = Field(
        16, ge=2, le=26, description="The window: candidates one prompt shows (past it, rounds of windows)."
    )
    max_items: int = Field(
        10_000,
        ge=2,
        description="Candidates (documents) one listwise or rerank request may carry, Cohere's own limit; over it, 413.",
    )
    max_group_size: int = Field(
        256,
        ge=1,
        description="Distinct responses one reward group may have (over it, 413), and the largest group_size a request "
        "or PCFJ_REWARD_GROUP_SIZE may wait for (422); 256 in 4 rounds of windows of 16 is 64 calls.",
    )
    window_rounds: int = Field(
        4,
        ge=2,
        le=MAX_K,
        description="Past one window: rounds of windows, the most windows a candidate is shown in (a request's k "
        "overrides); ceil(N / window) calls per round.",
    )
    max_question_chars: int = Field(32_000, ge=1)
    max_candidate_chars: int = Field(32_000, ge=1)
    max_body_bytes: int = Field(
        16_000_000, ge=1024, description="A request body, in bytes: 10,000 documents of about 1,500 characters."
    )
    max_header_bytes: int = Field(
        65_536,
        ge=4096,
        description="The request line and headers together, in bytes; past it, 431 before authentication "
        "(docs/operations/safety.md).",
    )
    max_header_count: int = Field(
        256, ge=16, description="Request headers one request may carry; past it, 431 before authentication."
    )
    max_json_depth: int = Field(
        64,
        ge=8,
        le=512,
        description="How deep arrays and objects may nest in a JSON body (a request of the service nests about 5 "
        "deep); past it, 422 before the body is parsed.",
    )
    default_k: int = Field(7, ge=1, le=MAX_K)
    max_executions: int = Field(5, ge=1, le=5)

    @model_validator(mode="after")
    def _check_limits(self) -> RequestLimits:
        if self.min_candidates > self.max_candidates:
            raise ValueError("min_candidates must not exceed max_candidates")
        return self


class FanOut(Group):
    """Fan-out and failure policy."""

    request_timeout_s: float = Field(120.0, gt=0, description="Per-request deadline for all of its backend calls.")
    backend_concurrency: int = Field(16, ge=1, description="Concurrent calls per backend, per process.")
    quorum: float | None = Field(
        default=None, gt=0, le=1, description="Share of runs that must succeed; unset: a strict majority."
    )
    max_retries: int = Field(2, ge=0, le=10, description="Our retries per backend call (SDK retries are off).")
    deadline_inflight: Literal["finish", "cancel"] = Field(
        "finish",
        description="Runs still in flight at a caller's deadline (deadline_ms, Prefer: wait): finish into the cache "
        "(the retry is served from it; they keep their backend slot until they end) or cancel.",
    )
    deadline_min_runs: int = Field(
        2, ge=1, le=MAX_K, description="Successful runs an answer cut by the caller's deadline needs (else 504)."
    )
    min_deadline_ms: int = Field(
        100, ge=1, description="The shortest deadline a request may give; a shorter one is refused (422)."
    )

    retry_base_s: float = Field(0.5, ge=0)
    retry_max_s: float = Field(20.0, ge=0)


class AccessAndSpend(Group):
    """Access and spend (see README "Running it safely")."""

    api_keys: SecretStr | None = Field(
        default=None,
        description="Turns authentication on: comma- or newline-separated 'name:key' or 'name:sha256:<hex>' entries.",
    )
    api_keys_file: Path | None = Field(default=None, description="A file of 'name:key' / 'name:sha256:<hex>' lines.")
    protect_ops: bool = Field(False, description="With keys on, /metrics and /readyz need a key too.")
    quota_requests_per_min: float | None = Field(
        default=None, gt=0, description="Per API key (or per client without keys): requests per minute."
    )
    quota_calls_per_min: float | None = Field(
        default=None,
        gt=0,
        description="Per API key: backend calls per minute (charged as planned, cache hits refunded).",
    )
    max_calls_per_request: int = Field(
        4096,
        ge=1,
        description="Backend calls (attempts, retries included) one judgment may make, checked on its plan before any "
        "call: a windowed judgment plans at most PCFJ_MAX_WINDOW_CALLS (2,048) unless it states max_calls, so 4,096 "
        "leaves as many again for retries; K=7 × 3 executions is 21.",
    )
    max_window_calls: int = Field(
        2048,
        ge=1,
        description="The calls a judgment past one window plans when its request states no max_calls: its rounds' "
        "calls (ceil(N / 16) × 4), at most this many: 10,000 documents in windows of 16 plan 2,048 of their 2,500 "
        "(never fewer than the least the design needs).",
    )
    max_input_tokens_per_request: int = Field(
        10_000_000,
        ge=1,
        description="Estimated input tokens (≈ characters / 4) of all of one request's calls: 10,000 documents of "
        "about 800 characters in 2,048 windows of 16 estimate about 7.6 million.",
    )
    max_cost_usd_per_request: float | None = Field(
        default=None,
        gt=0,
        description="The most one judgment may cost at PCFJ_PRICES (every call's estimated input tokens and its output "
        "cap), checked on its plan; unset: no cap. A model without a price is bounded by the call and token caps only.",
    )
    allowed_models: list[str] | None = Field(
        default=None,
        description="Model strings clients may name (fnmatch patterns); unset: the configured defaults and sim:*.",
    )
    max_pending_requests: int = Field(
        512, ge=1, description="POST requests in flight per process; past it a new one is refused (503) at once."
    )
    max_queued_calls: int = Field(
        1024,
        ge=0,
        description="Backend calls that may wait for a free slot ahead of a request's, per backend and process (a "
        "lower class's queued calls are not ahead: docs/operations/fleets.md); past it: 503. At least "
        "PCFJ_MAX_REWARD_CALLS_PER_REQUEST, so one request the other limits admit fits on an idle backend.",
    )
    max_pending_per_key: int | None = Field(
        default=None,
        ge=1,
        description="POST requests in flight per API key (per client address without keys) and process; past it "
        "that key gets 503. Unset: three quarters of PCFJ_MAX_PENDING_REQUESTS. A key with nothing in flight is "
        "admitted even when the others have filled PCFJ_MAX_PENDING_REQUESTS (up to an eighth more).",
    )
    max_reward_calls_per_request: int = Field(
        1024,
        ge=1,
        description="Backend calls of all the groups of one reward request together, retries included; each group "
        "also stays within PCFJ_MAX_CALLS_PER_REQUEST. At the default k a group costs at most 2 calls a sample "
        "(3 responses: 6 orders), so 2 × PCFJ_MAX_SAMPLES_PER_REQUEST (512) admits any request of whole groups: "
        "32 prompts × 8 samples plan 224.",
    )
    max_samples_per_request: int = Field(
        512, ge=1, description="Samples of one reward request (/v1/reward samples, /get_reward queries)."
    )
    max_waiting_members_per_key: int = Field(
        1024,
        ge=1,
        description="Reward samples one API key may have waiting for their group's other members (per process); "
        "past it: 503 with Retry-After.",
    )
    trusted_proxies: str | None = Field(
        default=None,
        description="Comma-separated proxy addresses or networks (e.g. 10.0.0.0/8) whose X-Forwarded-For names the "
        "client, or '*'; unset: X-Forwarded-For is ignored and the peer address is the client.",
    )
    body_deadline_s: float = Field(
        60.0, gt=0, description="A request's whole body must arrive within this (else 408), however it trickles."
    )
    header_timeout_s: float = Field(10.0, gt=0, description="A client must send its request headers within this.")
    body_timeout_s: float = Field(30.0, gt=0, description="Longest wait for the next chunk of a request body.")
    keep_alive_s: float = Field(5.0, gt=0, description="Idle keep-alive connections are closed after this.")
    log_format: Literal["text", "json"] = "text"

    def pending_per_key(self) -> int:
        """``max_pending_per_key``, or by default three quarters of ``max_pending_requests``."""
        if self.max_pending_per_key is not None:
            return self.max_pending_per_key
        return max(1, self.max_pending_requests * 3 // 4)


class CacheSettings(Group):
    """Cache."""

    cache_max_entries: int = Field(100_000, ge=1)
    cache_ttl_s: float = Field(7 * 86400, gt=0)
    redis_url: str | None = Field(
        default=None,
        description="Shared cache: redis://, rediss://, unix://, redis+cluster://h1:p1,h2:p2 or "
        "redis+sentinel://s1:26379,s2:26379/service; unset: the in-process cache only.",
    )
    redis_timeout_s: float = Field(0.25, gt=0, description="Redis socket read timeout; a slower Redis counts as down.")
    redis_connect_timeout_s: float = Field(0.25, gt=0, description="Redis socket connect timeout.")
    redis_max_connections: int = Field(64, ge=1, description="Pooled Redis connections per process (single node).")
    redis_pool_timeout_s: float = Field(
        0.5, gt=0, description="With every pooled connection busy, wait this long for one before failing open."
    )
    redis_warm_connections: int = Field(
        8, ge=1, description="Pooled Redis connections opened (and checked) at start-up, before /readyz answers 200."
    )
    redis_retries: int = Field(
        2,
        ge=0,
        description="Further tries of a cache operation that met a Redis timeout or broken connection (jittered "
        "backoff from 10 ms), never past the request deadline; 0: one try.",
    )
    redis_breaker_failure_rate: float = Field(
        0.5, gt=0, le=1, description="Share of Redis operations failing (after their retries) that opens the breaker."
    )
    redis_breaker_window_s: float = Field(
        10.0, gt=0, description="The breaker judges the failure rate over the operations of this many last seconds."
    )
    redis_breaker_min_ops: int = Field(
        20, ge=1, description="Fewest operations within the window before the breaker may open."
    )
    redis_breaker_cooldown_s: float = Field(5.0, gt=0, description="Open breaker: skip Redis this long, then probe.")
    redis_lock_ttl_s: float = Field(
        10.0, gt=0, description="Cross-replica single-flight lock lifetime; renewed while its holder's call runs."
    )
    cache_front_ttl_s: float = Field(
        300.0, gt=0, description="With Redis: lifetime of entries in the in-process layer in front of it."
    )
    cache_per_key: bool = Field(
        False,
        description="Keep each API key's cache entries (and in-flight calls) apart, for operators serving several "
        "tenants; off: one shared cache, which is what saves calls.",
    )


class RewardSettings(Group):
    """Rewards for RL (POST /v1/reward and its adapters)."""

    reward_group_size: int = Field(
        1,
        ge=1,
        description="Members a reward group waits for before it is judged (e.g. GRPO's completions per prompt), at "
        "most PCFJ_MAX_GROUP_SIZE; 1: judge what each request holds. Requests may override it.",
    )
    reward_group_wait_ms: int = Field(
        30_000, ge=0, le=600_000, description="Longest a reward group waits for its members; then judged as it is."
    )
    reward_max_wait_ms: int = Field(
        600_000, ge=0, le=600_000, description="Cap on any request's group_wait_ms: the longest a request is held."
    )


class JobSettings(Group):
    """Jobs (docs/api/jobs.md): judgments that outlive a request, in Redis with PCFJ_REDIS_URL (else in process)."""

    job_ttl_s: float = Field(
        86_400.0, gt=0, description="A job and its result are kept this long after submission (renewed when it ends)."
    )
    job_timeout_s: float = Field(
        3600.0,
        gt=0,
        description="A job that has not finished this long after it first started fails (job_timeout), resumes "
        "and retries after 429/503 included; each judgment in it is still bound by PCFJ_REQUEST_TIMEOUT_S.",
    )
    job_workers: int = Field(4, ge=1, description="Jobs one process runs at once; the others wait, queued.")
    job_lease_s: float = Field(
        30.0,
        gt=0,
        description="A running job's lease, renewed every third of it; a replica that stops renewing (killed) loses "
        "the job to another replica once it lapses.",
    )
    job_stall_s: float = Field(
        600.0,
        gt=0,
        description="A running job that finishes no backend call for this long stops renewing its lease and is "
        "given back to the queue (run again, at most 3 times in all): a job never stays running for ever.",
    )
    job_sweep_s: float = Field(
        2.0, gt=0, description="How often each process looks for queued jobs and lapsed leases to run."
    )
    max_jobs_per_key: int = Field(
        100, ge=1, description="Queued and running jobs per API key (all callers together without keys); past it, 429."
    )
    max_job_bytes_per_key: int = Field(
        20_000_000,
        ge=1024,
        description="Bytes one API key's jobs keep in the job store, ended ones included until they expire: a queued "
        "or running job its request (compact JSON), an ended one its result; past it, a new job is 413.",
    )
    max_job_store_bytes: int = Field(
        200_000_000,
        ge=1_000_000,
        description="Without Redis: bytes all the jobs of this process keep; past it the oldest ended jobs are "
        "forgotten first, and a new job that still does not fit is 503 (jobs_full).",
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        description="Turns job webhooks on: the HMAC-SHA256 key of their X-Pcfjudge-Signature header; unset: a "
        "webhook_url is refused (422).",
    )
    webhook_allow: str | None = Field(
        default=None,
        description="Comma-separated networks (10.0.0.0/8) or host names a webhook may reach although they are not "
        "public (loopback, private, link-local, …); unset: public addresses only.",
    )


class ProcessSettings(Group):
    """Process (`pcfjudge serve`)."""

    workers: int = Field(1, ge=1, le=128, description="Worker processes: the default of `pcfjudge serve --workers`.")
    shutdown_grace_s: int = Field(
        30,
        ge=0,
        description="On SIGTERM: stop accepting, let in-flight requests finish for up to this long, cancel the rest, "
        "exit 0. Set it at least PCFJ_REQUEST_TIMEOUT_S to never cut a request.",
    )
    rest_after_s: float = Field(
        30.0,
        ge=0,
        description="Once no judgment has run for this long, let go of what the last ones left in memory: empty the "
        "in-process memo caches, drop expired cache entries, give free memory back to the system; 0: never.",
    )


class MetricsSettings(Group):
    """Metrics."""

    metrics_models: list[str] = Field(
        default_factory=list,
        description="Extra model strings labelled by name in metrics (others are 'other'; labels stay bounded).",
    )


class SimSettings(Group):
    """Simulated judge."""

    sim_seed: int = 0
    sim_position_bias: float = 5.0
    sim_target_accuracy: float = Field(0.86, gt=0.25, lt=1)
    sim_latency_ms: float = Field(0.0, ge=0)
    sim_latency_tail: float = Field(
        0.0, ge=0, le=3, description="sim: each call's latency also times exp(tail · N(0,1)) (a lognormal tail)."
    )
    sim_fail_rate: float = Field(0.0, ge=0, le=1)


class ProviderSettings(Group):
    """Real providers (keys and URLs also honoured under the SDKs' own names)."""

    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    openai_output_mode: OutputMode = Field(
        "auto",
        description="Structured-output dialect for PCFJ_OPENAI_BASE_URL's engine: auto (json_schema, and on the "
        "engine's 400 the next of json_object_schema, tgi_json, json_object, prompt, remembered) or one pinned: "
        "json_schema, json_object_schema (llama-cpp-python), structured_outputs / guided_json (vLLM), "
        "ollama_format, tgi_json, json_object, prompt.",
    )
    openai_transport: Literal["wire", "sdk"] = Field(
        "wire",
        description="wire: each call one POST on a pooled aiohttp session (the SDK's configuration, a fraction of its "
        "CPU per call); sdk: the SDK's chat.completions.create on its aiohttp transport.",
    )
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
    )
    engines: dict[str, str] = Field(
        default_factory=dict,
        description='More OpenAI-compatible engines by provider name, e.g. {"smol": "http://127.0.0.1:8081/v1"}: '
        "each its own backend (model strings smol:<model>), no key (credentials in the URL go out as HTTP Basic).",
    )
    temperature: float | None = Field(0.0, ge=0, le=2)
    max_output_tokens: int = Field(2048, ge=64)
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = Field(
        default=None,
        description="Reasoning effort for reasoning models (OpenAI: none..xhigh; Anthropic: low..max). Off-OpenAI "
        "endpoints still get the temperature with it.",
    )

    @model_validator(mode="after")
    def _check_providers(self) -> ProviderSettings:
        if self.openai_base_url and urlsplit(self.openai_base_url).username is not None and self.openai_api_key:
            raise ValueError(
                "PCFJ_OPENAI_BASE_URL carries user:password and PCFJ_OPENAI_API_KEY (or OPENAI_API_KEY) is set: both "
                "would go in the Authorization header. Unset the key to send the URL's credentials (HTTP Basic), "
                "or drop them from the URL to send the key."
            )
        for name, url in self.engines.items():
            if not re.fullmatch(r"[a-z][a-z0-9_-]*", name) or name in ("openai", "anthropic", "sim"):
                raise ValueError(
                    f"PCFJ_ENGINES: {name!r} must be a new lower-case provider name (not openai/anthropic/sim)"
                )
            if urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"PCFJ_ENGINES: {name!r} needs an http(s) base URL (got {url!r})")
        return self


class FleetSettings(Group):
    """Judge fleets (docs/operations/fleets.md)."""

    models_file: Path | None = Field(
        default=None,
        description="A LiteLLM model_list (YAML or JSON): every model_name is a judge fleet, model string "
        "fleet:<model_name>, its entries the endpoints serving it (api_base, api_key or os.environ/NAME, rpm, tpm, "
        "max_parallel_requests: shared by every replica with PCFJ_REDIS_URL).",
    )
    fleet_allowed_fails: int = Field(
        3, ge=1, description="Consecutive failures (connection, 5xx, 429, timeout) that cool a fleet endpoint down."
    )
    fleet_cooldown_s: float = Field(
        30.0, gt=0, description="How long a cooled-down fleet endpoint is left alone before one call probes it."
    )
    fleet_max_block_s: float = Field(
        300.0,
        gt=0,
        description="The longest a fleet endpoint is blocked for a rate limit (its 429's Retry-After, its "
        "x-ratelimit-reset-*): a longer wait it asks for is cut to this, on every replica; the others serve meanwhile.",
    )


class JurySettings(Group):
    """Juries (docs/juries.md)."""

    juries: dict[str, list[str]] = Field(
        default_factory=dict,
        description='Named juries a request may give as its model, e.g. {"panel": ["openai:gpt-5.4", '
        '"anthropic:claude-sonnet-4-6", "smol:smollm2"]}; a request may also send a list of models.',
    )
    jury_weights: Literal["equal", "calibrated"] = Field(
        "equal",
        description="How a jury weighs its jurors: equally, or by the log-odds of the accuracy `pcfjudge calibrate` "
        "measured (equal while any juror is uncalibrated).",
    )
    jury_quorum: float | None = Field(
        default=None, gt=0, le=1, description="Share of jurors that must deliver; unset: a strict majority."
    )
    max_jurors: int = Field(5, ge=1, le=16, description="Jurors one jury may have.")

    @model_validator(mode="after")
    def _check_juries(self) -> JurySettings:
        for name, jurors in self.juries.items():
            if ":" in name or "," in name or not name:
                raise ValueError(
                    f"PCFJ_JURIES: jury name {name!r} must not contain ':' or ',' (it would read as models)"
                )
            if not jurors or len(set(jurors)) != len(jurors) or len(jurors) > self.max_jurors:
                raise ValueError(f"PCFJ_JURIES: {name!r} needs 1 to {self.max_jurors} distinct models (got {jurors})")
        return self


class CalibrationSettings(Group):
    """Calibration and drift (docs/calibration.md)."""

    calibration_file: Path | None = Field(
        default=None,
        description="Where `pcfjudge calibrate` stores its records and the service reads them without "
        "PCFJ_REDIS_URL (with it: Redis); unset: ~/.cache/pcfjudge/calibration.json.",
    )
    calibration_refresh_s: float = Field(
        60.0, gt=0, description="Seconds between the service's reloads of the calibration records."
    )
    drift_alpha: float = Field(
        0.01, gt=0, lt=1, description="Significance level of the drift tests (McNemar, two-proportion z)."
    )
    drift_min_points: float = Field(
        5.0,
        ge=0,
        le=100,
        description="A shift is drift only past this many percentage points (and significant at PCFJ_DRIFT_ALPHA).",
    )


class ChatSettings(Group):
    """The chat door (`POST /v1/chat/completions`, docs/chat-endpoint.md)."""

    chat_unrecognised: Literal["pass", "refuse"] = Field(
        "pass",
        description="A chat request whose prompt holds no comparison the door recognises: pass it to the judge as one "
        "call (header X-PCFJudge-Template: none) or refuse it (422).",
    )
    chat_orders: int = Field(
        4,
        ge=2,
        le=MAX_K,
        description="Orders a chat request's list of three or more marked candidates is judged in (a pair: both).",
    )


class PromptSettings(Group):
    """Prompts (README "Local open-weight judges")."""

    prompts: Literal["v2", "v1"] = Field(
        "v2",
        description="Prompt family: v2 (one required property per label, bounded fields: complete under any "
        "engine's constrained decoding) or the wave-1 v1 (kept selectable, with its own cache entries).",
    )
    rationales: bool | None = Field(
        default=None,
        description="Ask the judge for rationales (v2); a request's `rationales` overrides it. Unset: listwise and "
        "pairwise do, rerank and reward (whose callers rarely read them) do not.",
    )
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description='USD per million (input, output) tokens by model string, e.g. {"openai:gpt-5.4": [1.25, 10]}.',
    )
    batch_price_factor: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Share of PCFJ_PRICES a provider batch costs (`pcfjudge batch`, `eval --batch`): OpenAI's Batch "
        "API and Anthropic's Message Batches charge half price.",
    )
    batch_poll_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="Seconds between status checks while `pcfjudge eval --batch` waits for batches.",
    )


class _Environment(
    BaseSettings,
    ModelSelection,
    RequestLimits,
    FanOut,
    AccessAndSpend,
    CacheSettings,
    RewardSettings,
    JobSettings,
    ProcessSettings,
    MetricsSettings,
    SimSettings,
    ProviderSettings,
    FleetSettings,
    JurySettings,
    CalibrationSettings,
    PromptSettings,
    ChatSettings,
):
    """Every field of every group, read flat from the environment (``PCFJ_<NAME>``, and the providers' own names):
    what ``Settings`` reads its groups from."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", populate_by_name=True)


class Settings(BaseModel):
    """Every knob of the service, in groups (one a section of docs/operations/settings.md) under the same flat
    ``PCFJ_*`` environment names: ``settings.limits.max_items`` is ``PCFJ_MAX_ITEMS``. ``Settings()`` reads the
    environment; ``Settings(max_items=50)`` overrides a field by its flat name (tests build one so). A module that
    needs one group is handed that group."""

    model_config = ConfigDict(frozen=True)

    models: ModelSelection
    limits: RequestLimits
    fanout: FanOut
    access: AccessAndSpend
    cache: CacheSettings
    reward: RewardSettings
    jobs: JobSettings
    process: ProcessSettings
    metrics: MetricsSettings
    sim: SimSettings
    providers: ProviderSettings
    fleets: FleetSettings
    jury: JurySettings
    calibration: CalibrationSettings
    prompting: PromptSettings
    chat: ChatSettings

    def __init__(self, **fields: Any) -> None:
        """Flat field names (``max_items=50``) or whole groups (``limits=RequestLimits(...)``); the rest from the
        environment."""
        super().__init__(**fields)

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        """Flat field names (and the environment, for the rest) into the groups; a whole group may be given too."""
        if not isinstance(data, dict):
            return data
        given = {name: value for name, value in data.items() if name in cls.model_fields}
        if len(given) == len(cls.model_fields):
            return given
        flat = _Environment(**{name: value for name, value in data.items() if name not in cls.model_fields})
        read = {
            name: {field: getattr(flat, field) for field in group_type(name).model_fields} for name in cls.model_fields
        }
        return read | given

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.reward.reward_group_size > self.limits.max_group_size:
            raise ValueError(
                f"PCFJ_REWARD_GROUP_SIZE ({self.reward.reward_group_size}) must not exceed PCFJ_MAX_GROUP_SIZE "
                f"({self.limits.max_group_size})"
            )
        return self

    def replaced(self, **flat: Any) -> Settings:
        """These settings with some fields (by their flat names) changed, checked as ``Settings(...)`` checks them."""
        fields = {name: getattr(group, name) for group in self.groups() for name in type(group).model_fields}
        return Settings(**(fields | flat))

    def groups(self) -> tuple[BaseModel, ...]:
        return tuple(getattr(self, name) for name in type(self).model_fields)

    def model_allowlist(self) -> list[str]:
        """``allowed_models``, or by default the configured default models and every simulated model."""
        if self.access.allowed_models is not None:
            return self.access.allowed_models
        defaults = [
            self.resolved_default_model(),
            f"openai:{self.models.openai_default_model}",
            f"anthropic:{self.models.anthropic_default_model}",
            "sim:*",
            *(f"{name}:*" for name in self.providers.engines),
            *(["fleet:*"] if self.fleets.models_file is not None else []),
        ]
        return list(dict.fromkeys(defaults))

    def resolved_default_model(self) -> str:
        if self.models.default_model:
            return self.models.default_model
        if self.providers.openai_api_key is not None or self.providers.openai_base_url:
            return f"openai:{self.models.openai_default_model}"
        if self.providers.anthropic_api_key is not None:
            return f"anthropic:{self.models.anthropic_default_model}"
        return "sim:default"


def group_type(name: str) -> type[BaseModel]:
    annotation = Settings.model_fields[name].annotation
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation


GROUPS: tuple[type[BaseModel], ...] = tuple(group_type(name) for name in Settings.model_fields)
"""The groups, in the order docs/operations/settings.md shows them."""
FIELDS: dict[str, FieldInfo] = {name: info for group in GROUPS for name, info in group.model_fields.items()}
"""Every setting by its flat name (``max_items``: ``PCFJ_MAX_ITEMS``, ``settings.limits.max_items``)."""
