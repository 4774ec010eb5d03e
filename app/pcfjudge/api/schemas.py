"""HTTP request and response models (contract v1: field names are fixed, fields may be added)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    ValidationInfo,
    field_validator,
)

from pcfjudge.types import MAX_K

# Limits the service enforces at their default settings (PCFJ_MAX_*), stated in the schema for clients and fuzzers;
# the service checks the configured values (a 422 naming the limit) so an operator may raise or lower them.
MAX_CANDIDATES = 16
MAX_TEXT_CHARS = 32_000
_VISIBLE = re.compile(r"\S")  # the same rule as the schema's "pattern" (a text must contain a non-space)


class Strict(BaseModel):
    """Base of every request model: unknown fields are refused, nothing is coerced (``"7"``, ``7.0`` and ``true``
    are not integers; ``0`` and ``"no"`` are not booleans), and every string must be valid Unicode."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any, info: ValidationInfo) -> Any:
        problem = lone_surrogate(value, info.field_name or "value")
        if problem:
            raise ValueError(f"{problem}; send valid Unicode text (UTF-8 without lone surrogate escapes)")
        return value


def lone_surrogate(value: Any, path: str) -> str | None:
    """Where ``value`` (a JSON value) holds a string that is not valid Unicode (a lone ``\\udXXX`` escape), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{path} has a lone surrogate at character {exc.start}"
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if problem := lone_surrogate(item, f"{path}[{i}]"):
                return problem
    elif isinstance(value, dict):
        for key, item in value.items():
            if problem := lone_surrogate(key, path) or lone_surrogate(item, f"{path}.{key}"):
                return problem
    return None


def _non_blank(text: str) -> str:
    if _VISIBLE.search(text) is None:
        raise ValueError("must not be empty or only whitespace")
    return text


Text = Annotated[
    str,
    AfterValidator(_non_blank),
    Field(min_length=1, json_schema_extra={"maxLength": MAX_TEXT_CHARS, "pattern": r"\S"}),
]
"""Question or answer text: non-blank; at most PCFJ_MAX_QUESTION_CHARS / PCFJ_MAX_CANDIDATE_CHARS (default 32,000)."""


class CandidateIn(Strict):
    id: str = Field(
        min_length=1, max_length=200, description="Client id, returned in every field that names a candidate."
    )
    text: Text = Field(description="The candidate answer (untrusted text).")


class ListwiseRequest(Strict):
    question: Text = Field(description="The prompt the candidates answer.")
    candidates: list[
        Annotated[
            Annotated[CandidateIn, Tag("object")] | Annotated[Text, Tag("string")],
            Discriminator(lambda v: "string" if isinstance(v, str) else "object"),
        ]
    ] = Field(
        description='Candidate answers: {"id", "text"} objects or plain strings (which get ids "0", "1", …); '
        f"2 to PCFJ_MAX_CANDIDATES (default {MAX_CANDIDATES}).",
        json_schema_extra={"minItems": 2, "maxItems": MAX_CANDIDATES},
    )
    k: Annotated[StrictInt, Field(ge=1, le=MAX_K)] | Literal["auto"] | None = Field(
        default=None,
        description='Permutations (runs) per execution (default 7), or "auto": run k_min, then stop as soon as `stop` '
        "allows, at most k_max (adaptive K).",
    )
    k_min: StrictInt = Field(
        default=3, ge=1, le=MAX_K, description='With k "auto": runs per execution before any stop.'
    )
    k_max: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_K,
        description='With k "auto": the most runs per execution (default: the default k, 7).',
    )
    stop: Literal["certified", "confident"] = Field(
        default="certified",
        description='With k "auto": certified stops only when no outcome of the runs left could change the winners '
        "(same winners as k = k_max); confident also stops when the runs agree on the top set by a clear margin.",
    )
    max_calls: StrictInt | None = Field(
        default=None,
        ge=1,
        description="Budget: at most this many backend calls (cache hits are free), in schedule order.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Budget in USD at PCFJ_PRICES (the model must be priced), spent in schedule order.",
    )
    mode: Literal["consensus", "direct", "repeated_canonical"] = "consensus"
    weights: str | dict[str, float] = Field(
        default="proposed",
        description="A preset (proposed, uniform, score_only, rank_only, top_vote_only, no_uncertainty, score_rank, "
        "score_top) or {score, borda, top_vote, uncertainty}: non-negative, summing to 1.",
    )
    executions: int = Field(default=1, ge=1, le=5, description="Independent executions; consensus is averaged.")
    model: str | None = Field(default=None, description="provider:model, e.g. sim:default or openai:gpt-5.4.")
    seed: int = Field(default=0, ge=0, description="Selects the (deterministic) permutation schedule.")
    include_runs: bool = True
    rationales: bool | None = Field(
        default=None,
        description="Ask the judge for rationales (null: the server's default, PCFJ_RATIONALES; on for listwise). False saves "
        "output tokens and seconds per call.",
    )
    permutations: list[list[int]] | None = Field(
        default=None,
        description="Explicit displayed orders (indices into candidates) instead of the schedule.",
    )
    cache: Literal["use", "refresh", "bypass"] = "use"
    oracle_best: str | None = Field(
        default=None, description="sim:oracle only: the id of the truly best candidate (for simulations)."
    )

    @field_validator("k", mode="before")
    @classmethod
    def _k_is_a_count_or_auto(cls, value: Any) -> Any:
        """One clear message for every bad k (rather than one per member of the union)."""
        if value is None or value == "auto" or (type(value) is int and 1 <= value <= MAX_K):
            return value
        if type(value) is int:
            bound = "greater than or equal to 1" if value < 1 else f"less than or equal to {MAX_K}"
            raise ValueError(f'must be {bound} (or "auto"; got {value})')
        raise ValueError(f'must be an integer from 1 to {MAX_K} or "auto" (got {value!r})')


class CandidateOut(BaseModel):
    id: str
    consensus: float
    mean_score: float
    borda: float
    top_vote: float
    uncertainty: float
    major_error: float
    hallucinated_specificity: float


class JudgmentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)  # built from the core's ``CandidateJudgment``

    score: float
    rank: float
    major_error: bool
    hallucinated_specificity: bool
    calibrated_uncertainty: bool
    rationale: str


class RunTokens(BaseModel):
    """Tokens one backend call used (zero when it was served from the cache)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


class RunOut(RunTokens):
    execution: int
    index: int
    order: list[str]
    sample: int
    rank_source: Literal["judge", "scores"] | None
    judgments: dict[str, JudgmentOut] | None
    top_set: list[str] | None
    cached: bool
    latency_ms: float
    error: str | None


class Diagnostics(BaseModel):
    runs_ok: int
    runs_failed: int
    quorum: int
    agreement: float
    direct_winners: list[str] | None
    order_sensitive: bool
    k_requested: int
    k_capped: bool
    runs_made: int = Field(description="Runs made (successful or failed) over all executions.")
    stopped: Literal["certified", "confident", "k_max", "budget"] | None = Field(
        default=None,
        description='Why runs stopped: with k "auto" certified, confident or k_max; budget when max_calls or '
        "max_cost_usd ended the request early; null when a fixed k made every run.",
    )


class UsageOut(BaseModel):
    backend_calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float | None = None


class ListwiseResponse(BaseModel):
    request_id: str
    model: str
    prompt_version: str
    mode: str
    k: int
    executions: int
    weights: dict[str, float]
    winners: list[str]
    ranking: list[str]
    candidates: list[CandidateOut]
    runs: list[RunOut] | None
    diagnostics: Diagnostics
    usage: UsageOut
    degraded: bool


class ErrorResponse(BaseModel):
    error: str = Field(description="Machine-readable kind, e.g. validation_error, backend_timeout.")
    detail: str = Field(description="What went wrong and how to fix it.")
    errors: list[dict[str, str]] | None = None
    request_id: str | None = None
