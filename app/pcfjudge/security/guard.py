"""What one request may spend, checked before any backend call: model allowlist, call and token caps, call quota.

* ``check_model``: the model must match ``PCFJ_ALLOWED_MODELS`` (fnmatch patterns; default: the configured default
  models and ``sim:*``), else 422 naming the allowlist;
* ``check_plan``: at most ``PCFJ_MAX_CALLS_PER_REQUEST`` planned calls, ``PCFJ_MAX_INPUT_TOKENS_PER_REQUEST``
  estimated input tokens and (when set) ``PCFJ_MAX_COST_USD_PER_REQUEST`` of the plan's price, else 422 naming the cap
  and what the request would have needed;
* ``charge``: the calling key's backend-calls-per-minute bucket (``PCFJ_QUOTA_CALLS_PER_MIN``) pays for every
  planned call up front (429 with Retry-After when it cannot); when the judgment ends it is settled to the attempts
  actually made (``security.spend``): calls it did not make (cache hits, calls shared with another request, runs it
  did not need) are refunded, and retries beyond the plan are charged too (the bucket may go into debt).

Input tokens are estimated as (prompt characters) / 4 per call, prompt characters being the texts plus the
instructions of the prompt, measured once from the real template.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from fnmatch import fnmatchcase
from functools import cache

from pcfjudge import context
from pcfjudge.errors import ModelNotAllowed, OverLimit, QuotaExceeded
from pcfjudge.judging.pairwise_prompts import render_keyed
from pcfjudge.judging.prompts import render_listwise
from pcfjudge.security.limiter import Limiter, MemoryLimiter
from pcfjudge.settings import AccessAndSpend

CHARS_PER_TOKEN = 4


@cache
def instruction_chars() -> int:
    """Characters of a prompt that are not the item's texts (the larger of the listwise and keyed templates)."""
    listwise = render_listwise("", ["", ""], "0" * 16)
    keyed = render_keyed("", ["", ""], "0" * 16)
    return max(len(p.system) + len(p.user) for p in (listwise, keyed))


def estimate_input_tokens(texts: Sequence[str], calls: int, window: int | None = None) -> int:
    """Every text (question first) and the instructions in every call; with ``window`` (a windowed judgment), the
    question, the instructions and the ``window`` longest other texts in every call (an upper bound)."""
    shown = texts if window is None else [texts[0], *heapq.nlargest(window, texts[1:], key=len)]
    per_call = (sum(len(t) for t in shown) + instruction_chars()) / CHARS_PER_TOKEN
    return math.ceil(per_call) * calls


class Guard:
    def __init__(self, settings: AccessAndSpend, allowlist: Sequence[str], limiter: Limiter | None = None) -> None:
        """``settings``: the caps and quota (the access-and-spend group); ``allowlist``: ``Settings.model_allowlist``."""
        self.settings = settings
        self.limiter = limiter or MemoryLimiter()
        self.allowlist = list(allowlist)
        self._allowed: set[str] = set()  # model strings seen to match the allowlist (a handful per service)

    def check_model(self, model: str) -> None:
        if model in self._allowed:
            return
        if any(fnmatchcase(model, pattern) for pattern in self.allowlist):
            if len(self._allowed) < 1024:
                self._allowed.add(model)
            return
        allowed = ", ".join(self.allowlist)
        raise ModelNotAllowed(
            f"model: {model!r} is not allowed on this server; use one of: {allowed} (PCFJ_ALLOWED_MODELS)",
            field="model",
        )

    def check_plan(
        self,
        calls: int,
        texts: Sequence[str],
        *,
        field: str = "k",
        window: int | None = None,
        price_usd: float | None = None,
    ) -> None:
        s = self.settings
        if calls > s.max_calls_per_request:
            fix = "lower k or executions" if window is None else "send fewer candidates or lower k (rounds of windows)"
            raise OverLimit(
                f"{field}: this request needs {calls} backend calls; the limit is {s.max_calls_per_request} per request "
                f"(PCFJ_MAX_CALLS_PER_REQUEST); {fix}",
                field=field,
            )
        tokens = estimate_input_tokens(texts, calls, window)
        if tokens > s.max_input_tokens_per_request:
            raise OverLimit(
                f"this request needs about {tokens} input tokens; the limit is {s.max_input_tokens_per_request} per "
                "request (PCFJ_MAX_INPUT_TOKENS_PER_REQUEST); send shorter texts, fewer candidates or a lower k",
                field="candidates",
            )
        cap = s.max_cost_usd_per_request
        if cap is not None and price_usd is not None and price_usd > cap:
            raise OverLimit(
                f"{field}: this request may cost up to ${price_usd:.4f} at PCFJ_PRICES; the limit is ${cap:g} per "
                "request (PCFJ_MAX_COST_USD_PER_REQUEST); lower k, send fewer candidates or shorter texts",
                field=field,
            )

    async def charge(self, calls: int) -> Charge:
        """Take ``calls`` from the calling key's call quota (a no-op without ``PCFJ_QUOTA_CALLS_PER_MIN``)."""
        per_min = self.settings.quota_calls_per_min
        if per_min is None or calls <= 0:
            return Charge(self, "", 0)
        bucket = f"calls:{context.key_name()}"
        decision = await self.limiter.take(bucket, calls, per_min)
        if not decision.allowed:
            if math.isinf(decision.retry_after):
                raise QuotaExceeded(
                    f"this request needs {calls} backend calls; the quota is {per_min:g} per minute "
                    "(PCFJ_QUOTA_CALLS_PER_MIN), so it can never run; lower k or executions",
                )
            raise QuotaExceeded(
                f"backend call quota ({per_min:g} per minute) used up; retry after {decision.retry_after:.1f}s",
                retry_after=decision.retry_after,
            )
        return Charge(self, bucket, calls)


class Charge:
    """Calls taken from a quota; ``settle(made)`` refunds the ones a request did not make and charges the attempts it
    made beyond them (retries)."""

    def __init__(self, guard: Guard, bucket: str, calls: int) -> None:
        self.guard, self.bucket, self.calls = guard, bucket, calls

    async def settle(self, made: int) -> None:
        unused = self.calls - made
        per_min = self.guard.settings.quota_calls_per_min
        if unused != 0 and per_min is not None and self.bucket:
            await self.guard.limiter.take(self.bucket, -unused, per_min, force=True)
