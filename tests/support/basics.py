"""The repository root, the test data every module shares, and the environment variables a subprocess never inherits."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
OPENAI_KEY = "sk-test-openai-0123456789abcdefSECRET"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdefSECRET"
QUESTION = "In which year did the Berlin Wall fall?"
CANDIDATES = ["1989.", "It fell in 1991, on 3 October.", "I am not sure; possibly the late 1980s."]
# Environment variables no test may pass on: real provider keys and URLs, the service's own settings, and OpenTelemetry's
# (a developer's OTEL_EXPORTER_OTLP_ENDPOINT would turn tracing on: tests/telemetry/test_tracing.py sets its own).
SCRUBBED_ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "PCFJ_", "OTEL_")
# The calibration records every service and command the tests start read (unless a test names its own): a file that
# does not exist, never the developer's ~/.cache/pcfjudge/calibration.json (PCFJ_CALIBRATION_FILE's default).
NO_CALIBRATION = {
    "PCFJ_CALIBRATION_FILE": str(Path(tempfile.gettempdir()) / f"pcfjudge-tests-{os.getpid()}" / "no-calibration.json")
}


def gauge(text: str, name: str, **labels: str) -> float | None:
    """The value of the first sample ``name`` with these labels (and maybe others) in a /metrics page, or None."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return float(sample.value)
    return None
