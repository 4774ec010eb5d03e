"""TRL GRPOTrainer reward function backed by a pcfjudge service (httpx + standard library only).

    from pcfjudge.integrations.trl import PCFJudgeReward
    judge = PCFJudgeReward("http://judge:8000", reference_column="answer")
    trainer = GRPOTrainer(model=..., reward_funcs=[judge], args=GRPOConfig(num_generations=8, ...), ...)

TRL calls ``reward_func(prompts=, completions=, completion_ids=, **reward_kwargs)`` (trl/trainer/grpo_trainer.py
``_calculate_rewards``): the rows of a batch, a prompt's completions consecutive, plus every other dataset column as
a list, ``trainer_state``, ``log_extra`` and ``log_metric``; a ``None`` becomes NaN (no reward), not 0. This callable
posts the batch to ``/v1/reward`` grouped by prompt (``groups_per_request`` groups a request, at most
``max_concurrency`` requests in flight), retries 429/503 honouring Retry-After, and returns ``None`` for each sample
whose judgment failed transiently (logged as a WARNING and counted in ``failures``: ``failed_requests``,
``dropped_rewards``); a request the service refuses as a client error (4xx: a bad option, a limit) raises
``RewardRequestRefused`` with the service's detail. It is synchronous, as TRL runs plain callables in its training thread; ``acall`` is the same
as a coroutine function for TRL's async path (``reward_funcs=[judge.acall]``). TRL logs a reward under its
``__name__`` (``rewards/<name>/mean``): both are named ``name`` (default ``pcfjudge``), not ``acall``. Instances
pickle (no client is kept).
With ``group_size`` (= num_generations) a group split across processes is completed by the service's collector.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from functools import partial
from typing import Any

from pcfjudge.client.http import RetryPolicy
from pcfjudge.integrations.batches import Chunk, Result, apost_chunks, chunk_groups, outcomes, post_chunks
from pcfjudge.integrations.service import (
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT_S,
    Failures,
    RewardRequestRefused,
    RewardService,
    aclose_clients,
    reference_text,
)
from pcfjudge.reward.text import chat_text, content_text

__all__ = ["Failures", "PCFJudgeReward", "RewardRequestRefused", "aclose_clients"]

Rewards = list[float | None]


class PCFJudgeReward:
    """A GRPOTrainer ``reward_funcs`` entry scoring each completion against its group through pcfjudge."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        model: str | None = None,
        k: int | None = None,
        reward: str = "consensus",
        reference_column: str | None = None,
        group_size: int | None = None,
        group_wait_ms: int | None = None,
        groups_per_request: int = 8,
        max_concurrency: int = 4,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy = DEFAULT_RETRY,
        name: str = "pcfjudge",
    ) -> None:
        options = {"model": model, "k": k, "reward": reward, "group_size": group_size, "group_wait_ms": group_wait_ms}
        base = RewardService.from_kwargs({"url": url, "api_key": api_key, "timeout_s": timeout_s, **options})
        self.service = RewardService(base.url, base.api_key, timeout_s, retry, base.options)
        self.reference_column = reference_column
        self.groups_per_request = max(1, groups_per_request)
        self.max_concurrency = max(1, max_concurrency)
        self.failures = Failures()  # what this reward function could not reward (failed requests, dropped rewards)
        self.__name__ = name  # TRL names the reward's logged columns after it

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> Rewards:
        chunks = self.chunks(prompts, completions, kwargs)
        results = post_chunks(self.service, chunks, self.max_concurrency, self.failures)
        return _rewards(kwargs, len(completions), chunks, results, self.failures)

    @property
    def acall(self) -> Callable[..., Coroutine[Any, Any, Rewards]]:
        """The same as calling the instance, as a coroutine function (TRL gathers async reward functions on its own
        loop), named as the instance is: TRL logs ``rewards/<name>/mean``, where a bound method would say ``acall``."""
        named = partial(PCFJudgeReward._arewards, self)
        named.__name__ = self.__name__  # type: ignore[attr-defined]  # partial objects take attributes
        return named

    async def _arewards(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> Rewards:
        chunks = self.chunks(prompts, completions, kwargs)
        results = await apost_chunks(self.service, chunks, self.max_concurrency, self.failures)
        return _rewards(kwargs, len(completions), chunks, results, self.failures)

    async def aclose(self) -> None:
        """Close the HTTP clients ``acall`` opened on the running event loop (e.g. when training ends)."""
        await aclose_clients()

    def chunks(self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]) -> list[Chunk]:
        """The batch as requests: consecutive rows of one prompt form a group, ``groups_per_request`` a request."""
        if len(prompts) != len(completions):
            raise ValueError(f"got {len(prompts)} prompts for {len(completions)} completions")
        texts = [chat_text(p) for p in prompts]
        references = self._references(columns, len(texts))
        runs: list[list[int]] = []
        for i, text in enumerate(texts):
            if runs and texts[runs[-1][0]] == text:
                runs[-1].append(i)
            else:
                runs.append([i])
        repeated = Counter(texts[run[0]] for run in runs)
        token = secrets.token_hex(4)  # a prompt repeated in this batch: its runs are separate groups
        groups: list[Chunk] = []
        for j, run in enumerate(runs):
            groups.append([])
            for i in run:
                sample: dict[str, Any] = {"prompt": texts[i], "response": _completion(completions[i])}
                if references[i] is not None:
                    sample["reference"] = references[i]
                if repeated[texts[i]] > 1:
                    sample["group"] = f"trl-{token}-{j}"
                groups[-1].append((i, sample))
        return chunk_groups(groups, self.groups_per_request)

    def _references(self, columns: Mapping[str, Any], n: int) -> list[str | None]:
        if self.reference_column is None:
            return [None] * n
        if self.reference_column not in columns:
            known = sorted(k for k in columns if k not in ("trainer_state", "log_extra", "log_metric"))
            raise KeyError(f"reference_column {self.reference_column!r} is not a dataset column; columns: {known}")
        return [reference_text(v) for v in columns[self.reference_column]]


def _completion(completion: Any) -> str:
    """A completion as text: a string, or (conversational) the content of its messages."""
    if isinstance(completion, str):
        return completion
    return "\n".join(content_text(m.get("content")) for m in completion if isinstance(m, Mapping))


def _rewards(
    kwargs: Mapping[str, Any], n: int, chunks: list[Chunk], results: list[Result], failures: Failures
) -> Rewards:
    """Each row's reward, None where there is none (its group failed, or its request did after the retries)."""
    out: Rewards = [
        None if o is None or o["reward"] is None else float(o["reward"]) for o in outcomes(n, chunks, results, failures)
    ]
    log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
    if callable(log_metric) and out:
        log_metric("pcfjudge/no_reward", sum(r is None for r in out) / len(out))
    return out
