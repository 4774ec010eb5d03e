"""Checks every front door makes before any backend call (text limits, the model); each failure is a 422 naming
the field."""

from __future__ import annotations

from pcfjudge.backends.registry import Jury, ModelError, ResolvedModel
from pcfjudge.engine.judge import Judge
from pcfjudge.errors import client_error
from pcfjudge.settings import RequestLimits


def check_texts(limits: RequestLimits, question: str, texts: dict[str, str], cut_with: str = "") -> None:
    """The question and every answer text (keyed by field name) within the configured size limits; ``cut_with``:
    how the request itself could cut a text (a rerank door's field), added to the error."""
    if len(question) > limits.max_question_chars:
        detail = f"at most {limits.max_question_chars} characters (PCFJ_MAX_QUESTION_CHARS; got {len(question)})"
        raise client_error("question", detail)
    for field, text in texts.items():
        if len(text) > limits.max_candidate_chars:
            detail = (
                f"text has {len(text)} characters; the limit is {limits.max_candidate_chars} (PCFJ_MAX_CANDIDATE_CHARS)"
            )
            raise client_error(field, detail + (f"; {cut_with}" if cut_with else ""))


def resolve_model(judge: Judge, model: str | list[str] | None, oracle_best: str | None) -> ResolvedModel | Jury:
    """The backend (or jury: a PCFJ_JURIES name or a list of models) for a request's model, resolved once per
    request (the task carries it to the judge); ``oracle_best`` is only for the simulated oracle."""
    try:
        resolved = judge.resolve(model)
    except ModelError as exc:
        raise client_error("model", str(exc)) from None
    if oracle_best is not None and all(m.string != "sim:oracle" for m in resolved.jurors):
        raise client_error("oracle_best", "only the simulated oracle judge (model 'sim:oracle') takes oracle_best")
    return resolved
