"""``GET /metrics``: the Prometheus exposition (what each decision tells us: ``pcfjudge.doors.decisions``; requests:
``api.middleware.request``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from pcfjudge.telemetry import metrics as m

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics_endpoint(request: Request) -> Response:
    """Prometheus text exposition (all workers' series under ``--workers N``), or OpenMetrics with trace exemplars
    when the scraper asks for it (``telemetry.metrics.render_for``)."""
    body, media_type = m.render_for(request.headers.get("accept", ""))
    return Response(body, media_type=media_type)
