"""``GET /metrics``: the Prometheus exposition (what each decision tells us: ``pcfjudge.doors.decisions``; requests:
``api.middleware.request``)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from pcfjudge.telemetry import metrics as m

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics_endpoint() -> Response:
    """Prometheus text exposition (all workers' series under ``--workers N``)."""
    return Response(m.render(), media_type=m.CONTENT_TYPE)
