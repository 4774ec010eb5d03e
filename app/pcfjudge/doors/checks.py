"""Checks every front door makes before any backend call (text limits, the model); each failure is a 422 naming
the field."""

from __future__ import annotations

from pcfjudge.backends.registry import ModelError, ResolvedModel
from pcfjudge.errors import client_error
from pcfjudge.services import Services


def check_texts(services: Services, question: str, texts: dict[str, str]) -> None:
    """The question and every answer text (keyed by field name) within the configured size limits."""
    s = services.settings
    if len(question) > s.max_question_chars:
        raise client_error("question", f"at most {s.max_question_chars} characters (got {len(question)})")
    for field, text in texts.items():
        if len(text) > s.max_candidate_chars:
            raise client_error(field, f"text has {len(text)} characters; the limit is {s.max_candidate_chars}")


def resolve_model(services: Services, model: str | None, oracle_best: str | None) -> ResolvedModel:
    """The backend for a request's model string; ``oracle_best`` is only for the simulated oracle."""
    try:
        resolved = services.registry.resolve(model)
    except ModelError as exc:
        raise client_error("model", str(exc)) from None
    if oracle_best is not None and resolved.string != "sim:oracle":
        raise client_error("oracle_best", "only the simulated oracle judge (model 'sim:oracle') takes oracle_best")
    return resolved
