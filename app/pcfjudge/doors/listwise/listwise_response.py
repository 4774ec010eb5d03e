"""The ``/judge/listwise`` response: built once as plain JSON data, serialised once (orjson).

``response_data`` is the one shaper: ``to_response`` validates it into ``ListwiseResponse`` for Python callers
(rerank, the CLI, benches); the route serialises it once with orjson and sends the bytes as they are, so FastAPI
neither validates the model a second time nor encodes it twice (the route still declares ``response_model=ListwiseResponse``, so the OpenAPI document is
unchanged). Every number the model types as ``float`` is made a float here, so the bytes are exactly what the model
would serialise (``tests/doors/listwise/test_listwise_response.py`` checks that).
"""

from __future__ import annotations

import math
from typing import Any

from pcfjudge.doors.jury_response import jury_data
from pcfjudge.doors.listwise.listwise_protocol import ListwiseResponse
from pcfjudge.engine.listwise_runs import ListwiseResult
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import RunRecord
from pcfjudge.judging.window_rounds import WindowReport


def response_data(result: ListwiseResult, request_id: str, include_runs: bool) -> dict[str, Any]:
    """The response as JSON-ready data, in ``ListwiseResponse``'s field order."""
    c = result.consensus
    ok = sum(1 for r in result.runs if r.result is not None)
    usage = result.usage
    return {
        "request_id": request_id,
        "model": result.model,
        "prompt_version": result.prompt_version,
        "mode": result.mode,
        "k": result.k,
        "executions": 1 if result.windows is not None else max(r.execution for r in result.runs) + 1,
        "weights": {name: float(value) for name, value in result.weights.as_dict().items()},
        "winners": list(c.winners),
        "ranking": list(c.ranking),
        "candidates": _candidates(result),
        "runs": [_run(r) for r in result.runs] if include_runs else None,
        "diagnostics": {
            "runs_ok": ok,
            "runs_failed": len(result.runs) - ok,
            "quorum": result.quorum,
            "agreement": round(float(result.agreement), 4),
            "direct_winners": result.direct_winners,
            "order_sensitive": result.order_sensitive,
            "k_requested": result.k_requested,
            "k_capped": result.k_capped,
            "runs_made": len(result.runs),
            "stopped": result.stopped,
            "windows": _windows(result.windows) if result.windows is not None else None,
            "runs_planned": result.runs_planned or len(result.runs),
            "certified": result.certified,
        },
        "usage": {
            "backend_calls": result.backend_calls,
            "cache_hits": result.cache_hits,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
            "cost_usd": result.cost_usd,
        },
        "degraded": result.degraded,
        "jury": jury_data(result.jury),
    }


_SHAPED: dict[int, tuple[cons.Consensus, list[dict[str, Any]]]] = {}
"""The candidates' rows of the last ``_SHAPED_MAX`` consensuses, by identity (entries hold their consensus, so an id
names the object it was shaped from): a warm request repeats the consensus computed before (``listwise_runs``), and
its rows are the same numbers rounded the same way."""
_SHAPED_MAX = 1024


def _candidates(result: ListwiseResult) -> list[dict[str, Any]]:
    """The ``candidates`` rows (each a fresh dict: a caller may change its own response)."""
    c = result.consensus
    if result.windows is not None:
        return _rows(result)
    found = _SHAPED.get(id(c))
    if found is None or found[0] is not c:
        if len(_SHAPED) >= _SHAPED_MAX:
            del _SHAPED[next(iter(_SHAPED))]
        found = _SHAPED[id(c)] = (c, _rows(result))
    return [dict(row) for row in found[1]]


def _rows(result: ListwiseResult) -> list[dict[str, Any]]:
    return [
        {"id": cid, **{name: round(float(value), 4) for name, value in v.as_dict().items()}, **_fitted(result, cid)}
        for cid, v in result.consensus.candidates.items()
    ]


def _fitted(result: ListwiseResult, cid: str) -> dict[str, Any]:
    report = result.windows
    if report is None:
        return {"standard_error": None, "appearances": None}
    error = float(report.standard_errors[cid])  # infinite while the fit could not measure its scatter: null
    return {"standard_error": round(error, 4) if math.isfinite(error) else None, "appearances": report.appearances[cid]}


def _windows(report: WindowReport) -> dict[str, Any]:
    return {
        "window": report.window,
        "windows_per_round": report.windows_per_round,
        "rounds": report.rounds,
        "calls_budgeted": report.calls_budgeted,
        "windows_judged": report.windows_judged,
        "steps": report.steps,
        "stopped": report.stopped,
        "residual_sd": round(float(report.residual_sd), 4) if math.isfinite(report.residual_sd) else None,
        "top_n": report.top_n,
        "settled": report.settled,
        "position_effects": [round(float(e), 2) for e in report.position_effects],
        "scale": {"shift": round(report.scale[0], 4), "factor": round(report.scale[1], 6)},
    }


def _run(run: RunRecord) -> dict[str, Any]:
    result = run.result
    judgments = None
    if result is not None:
        judgments = {
            cid: {
                "score": float(j.score),
                "rank": float(j.rank),
                "major_error": j.major_error,
                "hallucinated_specificity": j.hallucinated_specificity,
                "calibrated_uncertainty": j.calibrated_uncertainty,
                "rationale": j.rationale,
            }
            for cid, j in result.judgments.items()
        }
    return {
        **run.usage.as_dict(),
        "execution": run.execution,
        "index": run.index,
        "order": run.order,
        "sample": run.sample,
        "rank_source": result.rank_source if result else None,
        "judgments": judgments,
        "top_set": cons.top_set(result) if result else None,
        "cached": run.cached,
        "latency_ms": float(run.latency_ms),
        "error": run.error,
        "model": run.model,
    }


def to_response(result: ListwiseResult, request_id: str, include_runs: bool) -> ListwiseResponse:
    """The response as the pydantic model (for Python callers; the route sends ``response_data``'s bytes)."""
    return ListwiseResponse.model_validate(response_data(result, request_id, include_runs))
