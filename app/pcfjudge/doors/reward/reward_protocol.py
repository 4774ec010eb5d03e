"""Request and response models of the RL reward endpoints: ``POST /v1/reward`` and its framework adapters
(``POST /get_reward`` in OpenRLHF's shape, ``POST /v1/reward/one`` in slime's)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.config import JsonDict

from pcfjudge.schemas.common import DEADLINE_MS, MAX_TEXT_CHARS, MODEL_OR_JURY, STREAM, Strict, Text
from pcfjudge.types import MAX_K

RewardMode = Literal["consensus", "borda", "win"]
MAX_SAMPLES = 512
"""Samples per /v1/reward request (the integrations send larger batches in several requests)."""
_LONG_TEXT: JsonDict = {"maxLength": MAX_TEXT_CHARS}  # PCFJ_MAX_CANDIDATE_CHARS at its default, as for candidates
_REWARD_HELP = (
    "How a group's consensus becomes a reward in 0-1: consensus (PCFJudge consensus / 100), borda (rank share "
    "/ 100) or win (share of permutations that put the response on top). A group of one distinct response is "
    "scored pointwise (the judge's score / 100) whatever the mode."
)


class RewardOptions(Strict):
    """Judging and grouping options (also accepted as query parameters by the adapters)."""

    model: str | list[str] | None = Field(default=None, description=MODEL_OR_JURY)
    k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_K,
        description="Permutations per group; default PCFJ_DEFAULT_K. A group past PCFJ_MAX_CANDIDATES: rounds of "
        "windows (at least 2; default PCFJ_WINDOW_ROUNDS).",
    )
    max_calls: int | None = Field(
        default=None,
        ge=1,
        description="A group past PCFJ_MAX_CANDIDATES: the calls its rounds of windows may make (default: k rounds'); "
        "fewer than two rounds' is a 422 saying how many.",
    )
    reward: RewardMode = Field(default="consensus", description=_REWARD_HELP)
    group_size: int | None = Field(
        default=None,
        ge=1,
        description="Members a group waits for (e.g. completions per prompt); a group with fewer in this request "
        "waits for the rest from other requests. At most PCFJ_MAX_GROUP_SIZE (default 256; more is a 422). "
        "Default PCFJ_REWARD_GROUP_SIZE (1: no waiting).",
    )
    group_wait_ms: int | None = Field(
        default=None,
        ge=0,
        le=600_000,
        description="Longest wait for a group's members; then it is judged with those that arrived. "
        "Default PCFJ_REWARD_GROUP_WAIT_MS.",
    )
    deadline_ms: int | None = Field(
        default=None,
        ge=1,
        le=86_400_000,
        description=DEADLINE_MS + " A group also stops waiting for members at half of it.",
    )


class RewardSample(Strict):
    prompt: Text = Field(description="The prompt the response answers (untrusted text).")
    response: str = Field(
        description="The completion to reward (untrusted text; may be empty).", json_schema_extra=_LONG_TEXT
    )
    reference: str | None = Field(
        default=None,
        description="A gold answer (label, ground truth): the group is judged with the reference-aware prompt "
        "listwise-ref-v2 (-terse without rationales). Blank means none.",
        json_schema_extra=_LONG_TEXT,
    )
    group: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Samples with the same group are judged together; default: those with the same prompt and "
        "reference. Members of one group must share prompt and reference.",
    )


class RewardRequest(RewardOptions):
    stream: bool = Field(default=False, description=STREAM)
    samples: list[RewardSample] = Field(
        min_length=1,
        description="At most PCFJ_MAX_SAMPLES_PER_REQUEST (default 512): more is a 413 naming the limit.",
        json_schema_extra={"maxItems": MAX_SAMPLES},
    )


class SampleError(BaseModel):
    error: str = Field(description="Error kind, e.g. backend_overloaded, backend_timeout, backend_error.")
    detail: str
    retry_after: float | None = Field(default=None, description="Seconds after which a retry may succeed.")


class RewardSampleResult(BaseModel):
    reward: float | None = Field(description="0-1; null when judging this sample's group failed (see error).")
    score: float | None = Field(description="The judge's mean 0-100 score over the permutations.")
    consensus: float | None = Field(description="PCFJudge consensus 0-100; null when scored pointwise.")
    rank: int | None = Field(description="1 = best consensus in the group; null when scored pointwise.")
    winner: bool | None = Field(description="Among the group's consensus winners (ties kept).")
    group_size: int = Field(description="Samples judged together (identical responses included).")
    candidates: int = Field(description="Distinct responses the judge compared.")
    scoring: Literal["group", "pointwise"] = Field(
        description="group: judged against the group's other responses; pointwise: alone (a group of one)."
    )
    reference: bool = Field(description="Judged against the sample's reference (prompt listwise-ref-…).")
    order_sensitive: bool | None = Field(description="Whether the judge's top pick changed with the order.")
    k: int = Field(description="Permutations (calls) the group's judgment used.")
    prompt_version: str
    stopped: Literal["deadline"] | None = Field(
        default=None, description="deadline: the caller's deadline cut the group's runs (a partial consensus)."
    )
    error: SampleError | None = None
    group_note: str | None = Field(
        default=None,
        description="Set when the group could not be collected as asked (the shared rendezvous in Redis stayed "
        "unreachable): the sample was judged with the members this replica had; it may also be judged with its "
        "full group on another replica, and is never charged twice.",
    )


class RewardUsage(BaseModel):
    groups: int = Field(description="Group judgments this request's samples took part in.")
    backend_calls: int = Field(description="Backend calls of those judgments (shared by every request in a group).")
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float | None = None


class RewardResponse(BaseModel):
    request_id: str
    model: str
    reward: RewardMode
    rewards: list[float | None] = Field(description="One per sample, in order; null where judging failed.")
    samples: list[RewardSampleResult]
    usage: RewardUsage


class OpenRLHFRequest(Strict):
    """OpenRLHF's remote reward request: ``query`` is prompt + response (special tokens kept), one per sample."""

    query: list[str] = Field(
        description="At most PCFJ_MAX_SAMPLES_PER_REQUEST (default 512): more is a 413 naming the limit.",
        json_schema_extra={"maxItems": MAX_SAMPLES},
    )
    prompts: list[str] = Field(json_schema_extra={"maxItems": MAX_SAMPLES})
    labels: list[str | int | float | None] | None = Field(
        default=None, description="One label per query (its reference; a dataset's numeric answers are written out)."
    )


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class SlimeRequest(Strict):
    """slime's ``remote_rm`` request (one sample); ``prompt`` may be a list of chat messages."""

    prompt: str | list[dict[str, Any]]
    response: str
    label: str | int | float | None = None


class SlimeResponse(RewardSampleResult):
    reward: float = Field(description="0-1 (use slime's --reward-key reward).")
