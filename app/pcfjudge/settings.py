"""Service settings, read from ``PCFJ_*`` environment variables (and the providers' own key/URL variables)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pcfjudge.types import MAX_K


class Settings(BaseSettings):
    """Every knob of the service. Tests build one directly; production reads the environment."""

    model_config = SettingsConfigDict(env_prefix="PCFJ_", extra="ignore", populate_by_name=True)

    # Model selection
    default_model: str | None = Field(
        default=None,
        description="Model used when a request names none; unset: the keyed provider's default, else sim.",
    )
    openai_default_model: str = "gpt-5.4"
    anthropic_default_model: str = "claude-sonnet-4-6"

    # Request limits
    min_candidates: int = Field(2, ge=2)
    max_candidates: int = Field(16, ge=2, le=26)
    max_question_chars: int = Field(32_000, ge=1)
    max_candidate_chars: int = Field(32_000, ge=1)
    max_body_bytes: int = Field(2_000_000, ge=1024)
    default_k: int = Field(7, ge=1, le=MAX_K)
    max_executions: int = Field(5, ge=1, le=5)

    # Fan-out and failure policy
    request_timeout_s: float = Field(120.0, gt=0, description="Per-request deadline for all of its backend calls.")
    backend_concurrency: int = Field(16, ge=1, description="Concurrent calls per backend, per process.")
    quorum: float | None = Field(
        default=None, gt=0, le=1, description="Share of runs that must succeed; unset: a strict majority."
    )
    max_retries: int = Field(2, ge=0, le=10, description="Our retries per backend call (SDK retries are off).")
    retry_base_s: float = Field(0.5, ge=0)
    retry_max_s: float = Field(20.0, ge=0)

    # Cache
    cache_max_entries: int = Field(100_000, ge=1)
    cache_ttl_s: float = Field(7 * 86400, gt=0)
    redis_url: str | None = Field(
        default=None,
        description="Shared cache: redis://, rediss://, unix://, redis+cluster://h1:p1,h2:p2 or "
        "redis+sentinel://s1:26379,s2:26379/service; unset: the in-process cache only.",
    )
    redis_timeout_s: float = Field(0.25, gt=0, description="Redis socket read timeout; a slower Redis counts as down.")
    redis_connect_timeout_s: float = Field(0.25, gt=0, description="Redis socket connect timeout.")
    redis_breaker_failures: int = Field(3, ge=1, description="Consecutive Redis failures that open the breaker.")
    redis_breaker_cooldown_s: float = Field(5.0, gt=0, description="Open breaker: skip Redis this long, then probe.")
    redis_lock_ttl_s: float = Field(
        10.0, gt=0, description="Cross-replica single-flight lock lifetime; renewed while its holder's call runs."
    )
    cache_front_ttl_s: float = Field(
        300.0, gt=0, description="With Redis: lifetime of entries in the in-process layer in front of it."
    )

    # Metrics
    metrics_models: list[str] = Field(
        default_factory=list,
        description="Extra model strings labelled by name in metrics (others are 'other'; labels stay bounded).",
    )

    # Simulated judge
    sim_seed: int = 0
    sim_position_bias: float = 5.0
    sim_target_accuracy: float = Field(0.86, gt=0.25, lt=1)
    sim_latency_ms: float = Field(0.0, ge=0)
    sim_fail_rate: float = Field(0.0, ge=0, le=1)

    # Real providers (keys and URLs also honoured under the SDKs' own names)
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    openai_output_mode: Literal["json_schema", "json_object", "prompt"] = "json_schema"
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PCFJ_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
    )
    temperature: float | None = Field(0.0, ge=0, le=2)
    max_output_tokens: int = Field(2048, ge=64)
    reasoning_effort: str | None = None
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description='USD per million (input, output) tokens by model string, e.g. {"openai:gpt-5.4": [1.25, 10]}.',
    )

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.min_candidates > self.max_candidates:
            raise ValueError("min_candidates must not exceed max_candidates")
        return self

    def resolved_default_model(self) -> str:
        if self.default_model:
            return self.default_model
        if self.openai_api_key is not None:
            return f"openai:{self.openai_default_model}"
        if self.anthropic_api_key is not None:
            return f"anthropic:{self.anthropic_default_model}"
        return "sim:default"
