"""What the runner is asked to do and what it answers: ``CallSpec`` (one backend call of a request) and
``CallOutcome``; ``from_cache`` turns a stored answer into an outcome, decoding it once per cache entry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pcfjudge.backends.base import JudgeCall
from pcfjudge.cache.interface import PARSED, CacheValue
from pcfjudge.judging.parse import OutputError
from pcfjudge.types import Failure, Usage

NO_USAGE = Usage()
Validator = Callable[[str], dict[str, Any]]
Decoder = Callable[[dict[str, Any]], Any]
"""Turns a stored answer into the form its judge works with (e.g. ``parse.validate_listwise``); raises
``OutputError`` when the answer cannot be used."""


class CallSpec:
    """One backend call of a request: its cache key, how to check its answer (``validate`` the text, then
    ``decode`` the JSON, if given) and its prompt. The prompt may be given as a function that renders it: it is
    then rendered on first use of ``call``, so a request answered from the cache renders none."""

    __slots__ = ("_call", "_render", "decode", "key", "prompt_version", "validate")
    _call: JudgeCall | None
    _render: Callable[[], JudgeCall] | None

    def __init__(
        self,
        key: str,
        call: JudgeCall | Callable[[], JudgeCall],
        validate: Validator,
        prompt_version: str,
        decode: Decoder | None = None,
    ) -> None:
        self.key, self.validate, self.prompt_version, self.decode = key, validate, prompt_version, decode
        self._call, self._render = (call, None) if isinstance(call, JudgeCall) else (None, call)

    @property
    def call(self) -> JudgeCall:
        if self._call is None:
            assert self._render is not None
            self._call, self._render = self._render(), None
        return self._call


@dataclass(slots=True)
class CallOutcome:
    answer: dict[str, Any] | None = None
    parsed: Any = None  # the answer as ``CallSpec.decode`` made it (None without a decoder)
    error: str | None = None
    detail: str | None = None
    cached: bool = False
    latency_ms: float = 0.0
    usage: Usage = NO_USAGE  # immutable: one instance for every outcome that spent nothing (a cache hit)
    retry_after: float | None = None
    failure: Failure | None = None  # what the failure was (the HTTP edge gives it its 502/503/504)

    @property
    def error_text(self) -> str:
        """The run error as recorded in responses and logs: ``kind: detail``."""
        kind = self.error or "error"
        return f"{kind}: {self.detail}" if self.detail else kind


def from_cache(spec: CallSpec, value: CacheValue) -> CallOutcome | None:
    """A stored answer as an outcome, decoded once per entry: the decoded form is kept in the entry (the in-process
    cache hands out the same dict on every hit). None when the stored answer cannot be used: the call is made again."""
    parsed = value.get(PARSED)
    if parsed is None and spec.decode is not None:
        try:
            parsed = spec.decode(value["answer"])
        except OutputError:
            return None
        value[PARSED] = parsed
    return CallOutcome(answer=value["answer"], parsed=parsed, cached=True)
