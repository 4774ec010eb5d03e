"""``pcfjudge serve``: uvicorn with the service's settings, and what it says at start-up (``log_startup``)."""

from __future__ import annotations

import argparse
import logging
import logging.config
import os
import signal
import tempfile
from pathlib import Path

import uvicorn

from pcfjudge.settings import Settings
from pcfjudge.telemetry.logs import log_config

LOG = logging.getLogger("pcfjudge.server")  # the name operators filter on (kept from the old module)


def startup_warnings(settings: Settings) -> list[str]:
    """One line each for what an operator must not miss: no authentication, a simulated default judge."""
    lines = []
    if settings.access.api_keys is None and settings.access.api_keys_file is None:
        lines.append(
            "authentication is off: anyone who can reach this address can judge, and spend on the judge's provider; "
            "set PCFJ_API_KEYS or PCFJ_API_KEYS_FILE to require keys"
        )
    model = settings.resolved_default_model()
    if model.startswith("sim:"):
        lines.append(
            f"the default judge is simulated ({model}): its verdicts are seeded draws, not a reading of the answers; "
            "set OPENAI_API_KEY or ANTHROPIC_API_KEY (or PCFJ_DEFAULT_MODEL) for a real judge"
        )
    return lines


def log_startup(settings: Settings) -> None:
    """Log ``startup_warnings`` once, when ``pcfjudge serve`` starts (before its workers do)."""
    for line in startup_warnings(settings):
        LOG.warning(line)


def _drained(signum: int, frame: object) -> None:
    """uvicorn re-raises SIGTERM once its graceful shutdown is over: a drained stop is a clean exit."""
    raise SystemExit(0)


def serve(args: argparse.Namespace) -> int:
    """Run uvicorn with the service's settings (PCFJ_*), its workers, logs and safety limits."""
    settings = Settings()
    workers: int = args.workers if args.workers is not None else settings.process.workers
    if workers > 1 or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Metrics from every worker: prometheus_client's multiprocess mode needs its directory set (and emptied)
        # before any worker imports it. Workers inherit the variable.
        directory = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or tempfile.mkdtemp(prefix="pcfjudge-metrics-"))
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):  # no series survive a restart
            stale.unlink()
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)

    logging.config.dictConfig(log_config(args.log_format or settings.access.log_format, args.log_level))
    log_startup(settings)  # authentication off, a simulated judge: said once, in the log's own format
    signal.signal(signal.SIGTERM, _drained)
    uvicorn.run(
        "pcfjudge.api.app:serve_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=workers,
        log_level=args.log_level,
        # Safety: headers within PCFJ_HEADER_TIMEOUT_S and within PCFJ_MAX_HEADER_BYTES / PCFJ_MAX_HEADER_COUNT
        # (api.header_timeout: httptools sets no limit of its own, and uvicorn's h11_max_incomplete_event_size
        # applies to its h11 protocol only), idle keep-alive closed, our access log
        http="pcfjudge.api.header_timeout:HeaderTimeoutProtocol",
        timeout_keep_alive=max(1, round(settings.access.keep_alive_s)),
        # X-Forwarded-For only from PCFJ_TRUSTED_PROXIES: uvicorn alone trusts 127.0.0.1, so a same-host proxy,
        # sidecar or port-forward would let any client name its own address (and dodge the per-address quota)
        proxy_headers=bool(settings.access.trusted_proxies),
        forwarded_allow_ips=settings.access.trusted_proxies or None,
        access_log=False,
        log_config=log_config(args.log_format or settings.access.log_format, args.log_level),
        # SIGTERM: stop accepting, let in-flight requests finish for up to the grace, cancel the rest, exit 0
        timeout_graceful_shutdown=settings.process.shutdown_grace_s,
    )
    return 0
