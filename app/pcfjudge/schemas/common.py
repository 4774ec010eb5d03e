"""What every front door's schemas share: strict request models, the text type and its limits, token usage and
the error body (contract v1: field names are fixed, fields may be added)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

# Limits the service enforces at their default settings (PCFJ_MAX_*), stated in the schema for clients and fuzzers;
# the service checks the configured values (a 422 naming the limit) so an operator may raise or lower them.
MAX_CANDIDATES = 16  # one window: the candidates of one prompt
MAX_ITEMS = 1000  # one request: past a window, judged in rounds of windows (PCFJ_MAX_ITEMS)
MAX_TEXT_CHARS = 32_000
_VISIBLE = re.compile(r"\S")  # the same rule as the schema's "pattern" (a text must contain a non-space)


class Strict(BaseModel):
    """Base of every request model: unknown fields are refused, nothing is coerced (``"7"``, ``7.0`` and ``true``
    are not integers; ``0`` and ``"no"`` are not booleans), and every string must be valid Unicode. Frozen: a request
    repeated byte for byte shares its validated model (``http.read_body``), so no route may change one."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

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


def non_blank(text: str) -> str:
    if _VISIBLE.search(text) is None:
        raise ValueError("must not be empty or only whitespace")
    return text


Text = Annotated[
    str,
    AfterValidator(non_blank),
    Field(min_length=1, json_schema_extra={"maxLength": MAX_TEXT_CHARS, "pattern": r"\S"}),
]
"""Question or answer text: non-blank; at most PCFJ_MAX_QUESTION_CHARS / PCFJ_MAX_CANDIDATE_CHARS (default 32,000)."""


class RunTokens(BaseModel):
    """Tokens one backend call used (zero when it was served from the cache)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


class UsageOut(BaseModel):
    backend_calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float | None = None


class ErrorResponse(BaseModel):
    error: str = Field(description="Machine-readable kind, e.g. validation_error, backend_timeout.")
    detail: str = Field(description="What went wrong and how to fix it.")
    errors: list[dict[str, str]] | None = None
    request_id: str | None = None


DEADLINE_MS = (
    "Answer within this many milliseconds of the request (or send Prefer: wait=<seconds>): the consensus of the runs "
    "finished by then (stopped: deadline), or 504 saying how far it got; the runs in flight finish into the cache."
)
STREAM = (
    "Server-sent events: an event per finished run with the consensus so far, then a result event equal to the "
    "ordinary response (errors as error events)."
)
MODEL_OR_JURY = (
    "provider:model (e.g. sim:default or openai:gpt-5.4); a fleet of PCFJ_MODELS_FILE (fleet:<model_name>, or its bare "
    "model_name as LiteLLM's clients send it); or a jury: a PCFJ_JURIES name or a list of models (docs/juries.md)."
)


class JurorOut(BaseModel):
    """One juror of a jury: its own result and how it sits with the jury's (docs/juries.md)."""

    model: str
    weight: float = Field(description="Its share of the jury's vote (equal, or from calibration).")
    delivered: bool = Field(description="False: too few of its runs succeeded; the jury answered without it.")
    error: str | None = Field(description="Why it did not deliver.")
    winners: list[str] | None = Field(description="Its own winners (pairwise: its APOCJudge verdict).")
    decision: str | None = Field(default=None, description="Pairwise: the APOCJudge rule behind its verdict.")
    scores: dict[str, float] | None = Field(default=None, description="Listwise: its own consensus per candidate.")
    agreement: float | None = Field(
        default=None, description="Listwise: Spearman's rho between its consensus and the jury's."
    )
    agrees: bool | None = Field(description="Its winners meet the jury's (pairwise: the same verdict).")
    runs: int
    runs_ok: int
    backend_calls: int
    cache_hits: int


class JuryOut(BaseModel):
    """A jury's judgment (the request's model named a jury or listed several models)."""

    name: str
    weights: Literal["equal", "calibrated"] = Field(
        description="equal, or calibrated: the log-odds of each juror's measured accuracy (PCFJ_JURY_WEIGHTS)."
    )
    quorum: int = Field(description="Jurors that had to deliver.")
    jurors: list[JurorOut]
    kendalls_w: float | None = Field(
        default=None, description="Listwise: Kendall's W of the jurors' rankings (1: identical); null for one juror."
    )
    fleiss_kappa: float | None = Field(
        default=None, description="Pairwise: Fleiss' kappa of the jurors' verdicts over both orders."
    )
    effective_jurors: float | None = Field(
        description="Independent jurors the jury is worth, from their measured error correlation (Kish); null "
        "while any pair of jurors was never calibrated together."
    )
    degraded: bool = Field(description="Some juror did not deliver (see jurors[].error).")
