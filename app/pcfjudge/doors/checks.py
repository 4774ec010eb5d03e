"""Checks every front door makes before any backend call (text limits, the model); each failure is a 422 naming
the field."""

from __future__ import annotations

from pcfjudge.backends.registry import Jury, ModelError, ResolvedModel
from pcfjudge.engine.judge import Judge
from pcfjudge.errors import client_error
from pcfjudge.settings import Settings


def check_texts(settings: Settings, question: str, texts: dict[str, str]) -> None:
    """The question and every answer text (keyed by field name) within the configured size limits."""
    if len(question) > settings.max_question_chars:
        raise client_error("question", f"at most {settings.max_question_chars} characters (got {len(question)})")
    for field, text in texts.items():
        if len(text) > settings.max_candidate_chars:
            raise client_error(field, f"text has {len(text)} characters; the limit is {settings.max_candidate_chars}")


def resolve_model(judge: Judge, model: str | list[str] | None, oracle_best: str | None) -> ResolvedModel | Jury:
    """The backend (or jury: a PCFJ_JURIES name or a list of models) for a request's model, resolved once per
    request (the task carries it to the judge); ``oracle_best`` is only for the simulated oracle."""
    try:
        resolved = judge.resolve(model)
    except ModelError as exc:
        juries = ", ".join(judge.settings.juries)
        hint = f"; or a jury: a list of models, or one of this server's PCFJ_JURIES: {juries}" if juries else ""
        raise client_error("model", f"{exc}{hint}") from None
    jurors = resolved.jurors if isinstance(resolved, Jury) else (resolved,)
    if oracle_best is not None and all(m.string != "sim:oracle" for m in jurors):
        raise client_error("oracle_best", "only the simulated oracle judge (model 'sim:oracle') takes oracle_best")
    return resolved
