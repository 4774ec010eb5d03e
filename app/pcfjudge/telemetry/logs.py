"""Logging for ``pcfjudge serve``: ``--log-format text`` (default) or ``json`` (one JSON object per line).

Our access log (logger ``pcfjudge.access``) writes one line per request with its id, route, status, latency, API key
*name*, backend calls and cache hits, and with tracing on its trace id; uvicorn's own access log is turned off.
Nothing logs keys, prompts or texts.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

LogFormat = Literal["text", "json"]
ACCESS = logging.getLogger("pcfjudge.access")
ACCESS_FIELDS = (
    "request_id",
    "method",
    "route",
    "status",
    "latency_ms",
    "key",
    "backend_calls",
    "cache_hits",
    "trace_id",
)


class TextAccessFormatter(logging.Formatter):
    """``<time> <level> <logger> <message> key=value ...`` for the fields a log call passed in ``extra``."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(f"{name}={getattr(record, name)}" for name in ACCESS_FIELDS if hasattr(record, name))
        return f"{line} {fields}" if fields else line


def log_config(fmt: LogFormat, level: str = "info") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn's ``log_config``: every logger to stderr in one format."""
    if fmt == "json":
        formatter: dict[str, Any] = {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        }
    else:
        formatter = {"()": TextAccessFormatter, "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    handler = {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"}
    loggers = {name: {"handlers": ["default"], "level": level.upper(), "propagate": False} for name in LOGGERS}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {"default": handler},
        "loggers": loggers,
    }


LOGGERS = ("pcfjudge", "uvicorn", "uvicorn.error")
