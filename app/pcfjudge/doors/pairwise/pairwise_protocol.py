"""HTTP models of ``POST /judge/pairwise`` (contract v1 field names; fields beyond the contract are additions)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from pcfjudge.schemas.common import DEADLINE_MS, MODEL_OR_JURY, STREAM, JuryOut, RunTokens, Strict, Text, UsageOut

Verdict = Literal["A", "B", "tie"]


class PairwiseRequest(Strict):
    question: Text = Field(description="The prompt both responses answer.")
    response_a: Text = Field(description="The first response (untrusted text); 'A' in every verdict.")
    response_b: Text = Field(description="The second response (untrusted text); 'B' in every verdict.")
    model: str | list[str] | None = Field(default=None, description=MODEL_OR_JURY)
    keyed: bool = Field(default=True, description="Run the keyed confirmation pass when the two orders disagree.")
    estimation: bool | None = Field(
        default=None,
        description="Force the estimation guard on (true) or off (false); null: detect estimation-style prompts.",
    )
    include_runs: bool = True
    rationales: bool | None = Field(
        default=None,
        description="Ask the judge for rationales (null: the server's default, PCFJ_RATIONALES; on for pairwise). False saves "
        "output tokens and seconds per call.",
    )
    cache: Literal["use", "refresh", "bypass"] = "use"
    oracle_best: Literal["A", "B"] | None = Field(
        default=None, description="sim:oracle only: which response is truly better (for simulations)."
    )
    deadline_ms: StrictInt | None = Field(default=None, ge=1, le=86_400_000, description=DEADLINE_MS)
    stream: bool = Field(default=False, description=STREAM)


class KeyedOut(BaseModel):
    ran: bool = Field(description="The keyed pass was attempted (see runs for its outcome).")
    needed: bool = Field(description="Both orders succeeded and disagreed, so an override was on the table.")
    skipped: Literal["estimation", "disabled", "order_failed"] | None = Field(
        description="Why a needed keyed pass did not run (order_failed: an order pass failed, nothing to arbitrate)."
    )
    resolved_answer: str | None
    winner: Verdict | None
    error: str | None = None


class EstimationOut(BaseModel):
    estimation: bool
    source: Literal["request", "heuristic"]
    cue: str | None = Field(description="The heuristic cue that matched (see pcfjudge/judging/estimation.py).")


class PassOut(RunTokens):
    model_config = ConfigDict(populate_by_name=True)

    name: Literal["direct", "swapped", "keyed"] = Field(alias="pass", description="direct, swapped or keyed.")
    order: list[Literal["A", "B"]] = Field(description="Original labels in displayed order.")
    prompt_version: str
    verdict: Verdict | None = Field(description="The pass's verdict mapped to the original labels.")
    raw_verdict: Verdict | None = Field(description="The verdict as the judge gave it (displayed labels).")
    rationale: str | None = Field(description="The judge's rationale, verbatim (its A/B are the displayed labels).")
    resolved_answer: str | None = Field(default=None, description="keyed pass only: the judge's own answer.")
    cached: bool
    latency_ms: float
    error: str | None
    model: str | None = Field(default=None, description="A jury's pass: the juror that made it; else null.")


class PairwiseResponse(BaseModel):
    request_id: str
    model: str
    prompt_version: str
    prompt_versions: dict[str, str]
    winner: Verdict
    label: Literal["A>B", "B>A", "A=B"]
    direct: Verdict | None = Field(description="The direct (A first) verdict; null only if that pass failed.")
    swapped: Verdict | None = Field(description="The swapped-order verdict mapped back; null if that pass failed.")
    order_consistent: bool | None
    override: bool
    decision: str = Field(description="Which protocol rule produced the winner (see pcfjudge/judging/apoc.py).")
    keyed: KeyedOut
    estimation: EstimationOut
    preference_a: float | None = Field(
        description="Share of successful passes favouring A (ties count 1/2): a reward in [0, 1]."
    )
    runs: list[PassOut] | None
    usage: UsageOut
    degraded: bool
    jury: JuryOut | None = Field(default=None, description="A jury's judgment: each juror's verdict and agreement.")
    stopped: Literal["deadline"] | None = Field(
        default=None, description="deadline: the caller's deadline cut a pass (its verdict is null; see decision)."
    )
