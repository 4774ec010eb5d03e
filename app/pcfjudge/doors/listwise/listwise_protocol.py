"""/judge/listwise's request and response (contract v1: field names are fixed, fields may be added)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    field_validator,
)

from pcfjudge.schemas.common import (
    DEADLINE_MS,
    MAX_CANDIDATES,
    MAX_ITEMS,
    MODEL_OR_JURY,
    STREAM,
    JuryOut,
    RunTokens,
    Strict,
    Text,
    UsageOut,
)
from pcfjudge.types import MAX_K


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
        f"2 to PCFJ_MAX_ITEMS (default {MAX_ITEMS}). Up to PCFJ_MAX_CANDIDATES (default {MAX_CANDIDATES}, one "
        "prompt's window) they are judged together over k permutations; past it, in k rounds of windows fitted "
        "onto one scale (docs/method.md).",
        json_schema_extra={"minItems": 2, "maxItems": MAX_ITEMS},
    )
    k: Annotated[StrictInt, Field(ge=1, le=MAX_K)] | Literal["auto"] | None = Field(
        default=None,
        description='Permutations (runs) per execution (default 7), or "auto": run k_min, then stop as soon as `stop` '
        "allows, at most k_max (adaptive K). Past one window: rounds of windows, the most windows a candidate is "
        "shown in (default PCFJ_WINDOW_ROUNDS, 4; at least 2).",
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
    model: str | list[str] | None = Field(default=None, description=MODEL_OR_JURY)
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
    deadline_ms: StrictInt | None = Field(default=None, ge=1, le=86_400_000, description=DEADLINE_MS)
    stream: bool = Field(default=False, description=STREAM)

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
    standard_error: float | None = Field(
        default=None,
        description="Past one window: the standard error of the fitted consensus (same 0–100 scale); else null.",
    )
    appearances: int | None = Field(
        default=None, description="Past one window: the windows this candidate was judged in; else null."
    )


class ScaleOut(BaseModel):
    shift: float = Field(description="Points added to every fitted score (0: as fitted).")
    factor: float = Field(description="Then multiplied by this (1 unless the fitted spread passed 100).")


class WindowsOut(BaseModel):
    """How a judgment past one window went (docs/method.md, "Many candidates")."""

    window: int = Field(description="Candidates per prompt at most (PCFJ_MAX_CANDIDATES).")
    windows_per_round: int
    rounds: int = Field(description="Rounds budgeted: the most windows any candidate is shown in (k).")
    calls_budgeted: int = Field(description="The most calls this judgment could make (checked against the limits).")
    windows_judged: int
    steps: int = Field(
        description="Round trips: the whole order's rounds together; with a top, the first round, then one per "
        "stage and per boundary step."
    )
    stopped: Literal["rounds", "certified", "budget", "failed", "incomplete", "deadline"] = Field(
        description="rounds: every round made; certified: the top (the winner, or rerank's top_n, at least its top "
        "10) no longer in doubt; budget: the calls ran out with candidates still within two standard errors of the "
        "boundary; "
        "failed: calls of a step failed, so no further boundary round was planned (the result is degraded); "
        "incomplete: failed calls left a candidate unjudged or off the scale; deadline: the caller's deadline came."
    )
    residual_sd: float | None = Field(
        description="Scatter of one call's values around the fit (0–100 scale); null while the windows are too few "
        "to measure it (then no standard error is known either, and nothing is certified)."
    )
    top_n: int = Field(default=0, description="The top asked for (the winner: 1; rerank's top_n; 0: the whole order).")
    settled: bool | None = Field(
        default=None,
        description="With a top_n: whether who is in it is no longer in doubt (fewer than two candidates within two "
        "standard errors of its boundary). false: the budget ran out first; rerank says so in meta.warnings.",
    )
    scale: ScaleOut = Field(
        default_factory=lambda: ScaleOut(shift=0.0, factor=1.0),
        description="How the fitted scores were put on 0–100: consensus = (fitted + shift) · factor. The fit "
        "identifies differences only; shift 0 and factor 1 unless they strayed past 0 or 100 (docs/method.md).",
    )
    position_effects: list[float] = Field(
        default_factory=list,
        description="The judge's position bias as the fit measured it, by display position (0 first), in points of "
        "the 0–100 scale, shrunk towards none while it is mostly noise (James–Stein, docs/method.md); taken out of "
        "every candidate's consensus.",
    )


class JudgmentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)  # built from the core's ``CandidateJudgment``

    score: float
    rank: float
    major_error: bool
    hallucinated_specificity: bool
    calibrated_uncertainty: bool
    rationale: str


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
    model: str | None = Field(default=None, description="A jury's run: the juror that made it; else null.")


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
    stopped: Literal["certified", "confident", "k_max", "budget", "deadline"] | None = Field(
        default=None,
        description='Why runs stopped: with k "auto" certified, confident or k_max; budget when max_calls or '
        "max_cost_usd ended the request early; deadline when the caller's deadline did; null when a fixed k made "
        "every run.",
    )
    windows: WindowsOut | None = Field(default=None, description="Past one window: the design and why it stopped.")
    runs_planned: int | None = Field(default=None, description="Runs the judgment planned (runs_made of them ran).")
    certified: bool | None = Field(
        default=None,
        description="Cut by the deadline: true when no outcome of the runs cut could have changed the winners "
        "(adaptive K's certificate); else null.",
    )


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
    jury: JuryOut | None = Field(default=None, description="A jury's judgment: each juror's result and agreement.")
