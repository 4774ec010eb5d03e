"""The repository root, the test data every module shares, and the environment variables a subprocess never inherits."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPENAI_KEY = "sk-test-openai-0123456789abcdefSECRET"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdefSECRET"
QUESTION = "In which year did the Berlin Wall fall?"
CANDIDATES = ["1989.", "It fell in 1991, on 3 October.", "I am not sure; possibly the late 1980s."]
# Environment variables no test may pass on: real provider keys and URLs, and the service's own settings.
SCRUBBED_ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "PCFJ_")
