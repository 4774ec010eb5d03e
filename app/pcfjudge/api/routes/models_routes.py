"""GET /v1/models: the models this server judges with (allowed, or calibrated), each with its latest calibration
record under the service's listwise prompt version and its drift state (``pcfjudge calibrate``, docs/calibration.md).

Records come from the service's ``reliability`` book, reloaded from the store every PCFJ_CALIBRATION_REFRESH_S.
With API keys configured this route needs one, like every judging route.
"""

from __future__ import annotations

from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from pcfjudge.http.deps import ServicesDep
from pcfjudge.judging.prompts import listwise_version
from pcfjudge.judging.reliability import Reliability

router = APIRouter()

SIM_MODELS = ("sim:default", "sim:oracle")
WILDCARDS = frozenset("*?[")


class ShiftOut(BaseModel):
    measure: Literal["accuracy", "first_position_win_rate"]
    baseline: float = Field(description="The baseline's proportion (0-1).")
    current: float = Field(description="This record's proportion (0-1).")
    points: float = Field(description="current - baseline, in percentage points.")
    p_value: float
    test: str = Field(description="mcnemar-exact (accuracy, paired items) or two-proportion-z (first position).")
    drift: bool = Field(description="Significant at PCFJ_DRIFT_ALPHA and past PCFJ_DRIFT_MIN_POINTS.")


class Calibration(BaseModel):
    accuracy: float = Field(description="Share of the slice's items whose consensus winner was the gold answer.")
    order_consistency: float = Field(description="Share of items whose K runs all put the same top set first.")
    first_position_win_rate: float = Field(description="Share of successful runs whose top choice was shown first.")
    items: int
    k: int = Field(description="Permutations asked for per item (a pair has two orders).")
    runs: int = Field(description="Successful runs behind first_position_win_rate.")
    slice: str = Field(description="The pinned slice: its name, size, K and content hash.")
    measured_at: str = Field(description="When (ISO 8601, UTC).")
    baseline_at: str | None = Field(description="When its baseline was measured; null: this record is the baseline.")
    shifts: list[ShiftOut] = Field(description="Each measure against the baseline (empty for a baseline).")


class ModelInfo(BaseModel):
    id: str = Field(description="provider:model, fleet:<name> or a PCFJ_JURIES name, as a request names it.")
    object: Literal["model"] = "model"
    owned_by: str = Field(description="The provider (fleet for a fleet, jury for a jury).")
    allowed: bool = Field(description="Whether requests may name it (PCFJ_ALLOWED_MODELS; a jury: all its jurors).")
    default: bool = Field(description="The model of a request that names none.")
    prompt_version: str = Field(description="The listwise prompt version its calibration is for (the service's).")
    calibration: Calibration | None = Field(description="The latest record under prompt_version; null: none.")
    drift: Literal["uncalibrated", "baseline", "stable", "drift"] = Field(
        description="baseline: the first record of its slice; stable or drift: compared with that baseline."
    )
    other_prompt_versions: list[str] = Field(description="Prompt versions it also has records for.")


class ModelsResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelInfo]


def _when(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _calibration(record: Reliability) -> Calibration:
    return Calibration(
        accuracy=round(record.accuracy, 4),
        order_consistency=round(record.order_consistency, 4),
        first_position_win_rate=round(record.first_position_win_rate, 4),
        items=record.items,
        k=record.k,
        runs=record.runs,
        slice=record.slice,
        measured_at=_when(record.measured_at) or "",
        baseline_at=_when(record.baseline_at),
        shifts=[
            ShiftOut(
                measure=s.measure,
                baseline=round(s.baseline, 4),
                current=round(s.current, 4),
                points=round(s.points, 2),
                p_value=s.p_value,
                test=s.test,
                drift=s.drift,
            )
            for s in record.drift
        ],
    )


@router.get("/v1/models", response_model=ModelsResponse)
async def models_route(services: ServicesDep) -> ModelsResponse:
    """The models requests may name (and any other with a calibration record), with calibration and drift."""
    settings = services.settings
    patterns = settings.model_allowlist()
    default = settings.resolved_default_model()
    version = listwise_version(None, services.judge.style(None))
    book = services.reliability.records
    named = [p for p in patterns if not WILDCARDS & set(p)]
    sims = [m for m in SIM_MODELS if any(fnmatchcase(m, p) for p in patterns)]
    fleets = services.registry.fleet_models()  # fleet:<model_name> of PCFJ_MODELS_FILE
    juries = settings.jury.juries  # PCFJ_JURIES: a name every door takes as its model
    models = list(dict.fromkeys([default, *named, *sims, *fleets, *juries, *sorted(model for model, _ in book)]))
    data = []
    for model in models:
        record = book.get((model, version))
        jurors = juries.get(model, [model])
        data.append(
            ModelInfo(
                id=model,
                owned_by="jury" if model in juries else model.partition(":")[0],
                allowed=all(any(fnmatchcase(m, p) for p in patterns) for m in jurors),
                default=model == default,
                prompt_version=version,
                calibration=_calibration(record) if record is not None else None,
                drift=record.drift_state if record is not None else "uncalibrated",
                other_prompt_versions=sorted(v for m, v in book if m == model and v != version),
            )
        )
    return ModelsResponse(data=data)
