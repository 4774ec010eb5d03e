"""A jury's report (``judging.jury.JuryReport``) as the ``jury`` object of every front door's response."""

from __future__ import annotations

from typing import Any

from pcfjudge.judging.jury import JurorReport, JuryReport


def jury_data(report: JuryReport | None) -> dict[str, Any] | None:
    """JSON-ready data in ``JuryOut``'s field order (None for a single model)."""
    if report is None:
        return None
    return {
        "name": report.name,
        "weights": report.weights,
        "quorum": report.quorum,
        "jurors": [_juror(j) for j in report.jurors],
        "kendalls_w": report.kendalls_w,
        "fleiss_kappa": report.fleiss_kappa,
        "effective_jurors": report.effective_jurors,
        "degraded": report.degraded,
    }


def _juror(j: JurorReport) -> dict[str, Any]:
    return {
        "model": j.model,
        "weight": round(float(j.weight), 4),
        "delivered": j.delivered,
        "error": j.error,
        "winners": j.winners,
        "decision": j.decision,
        "scores": {cid: float(v) for cid, v in j.scores.items()} if j.scores is not None else None,
        "agreement": j.agreement,
        "agrees": j.agrees,
        "runs": j.runs,
        "runs_ok": j.runs_ok,
        "backend_calls": j.backend_calls,
        "cache_hits": j.cache_hits,
    }
