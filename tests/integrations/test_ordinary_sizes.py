"""Issue 36 item 6: ordinary sizes work with the defaults, and failures are loud.

Each size users hit with no setting changed, through the client that sends it, against one ``pcfjudge serve`` on
embedded defaults (the simulated judge): the cohere SDK's rerank over 1,000 documents, TRL's reward function with
``group_size`` 64 and 128, OpenRLHF's ``/get_reward`` with 32 × 8 and 16 × 16 samples (its own aiohttp request code,
``tests/doors/reward/test_reward_adapters.py``), verl's batch reward over 256 samples (64 prompts × 4 rollouts: 448
calls, the most a batch of that size plans) and a ``/judge/listwise`` request of 100 candidates. Then the trainer
adapters' failures: a 4xx raises with the service's detail; a transient failure gives no reward, with a WARNING and a
counter.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import cohere
import httpx
import pcfjudge
import pytest
from pcfjudge.client.http import NO_RETRY
from pcfjudge.integrations import service as reward_service
from pcfjudge.integrations import verl as verl_integration
from pcfjudge.integrations.service import RewardRequestRefused
from pcfjudge.integrations.trl import PCFJudgeReward

from tests.doors.reward.test_reward_adapters import chat_prompt, openrlhf_fetch_rewards_via_http
from tests.support.flaky_proxy import FlakyProxy
from tests.support.waits import free_port

pytestmark = pytest.mark.slow
QUESTION = "Which planet in the solar system has the most confirmed moons?"


def document(i: int) -> str:
    """A retrieved passage of about 600 characters (distinct per index)."""
    return (
        f"Passage {i}. " + f"Saturn has {80 + i % 70} confirmed moons in catalogue {i}; Jupiter follows closely. " * 7
    )


def completions(tag: str, n: int) -> list[dict[str, Any]]:
    """TRL's rows for one prompt's ``n`` completions (conversational), consecutive as GRPO passes them."""
    prompt = [{"role": "user", "content": f"[{tag}] {QUESTION}"}]
    return [
        {"prompt": prompt, "completion": [{"role": "assistant", "content": f"Answer {i}: Saturn, {i} moons."}]}
        for i in range(n)
    ]


def trl_call(judge: PCFJudgeReward, rows: list[dict[str, Any]]) -> list[float | None]:
    """TRL's ``_calculate_rewards`` call of a sync reward function (tests/integrations/test_reward_integrations.py)."""
    return judge(
        prompts=[r["prompt"] for r in rows],
        completions=[r["completion"] for r in rows],
        completion_ids=[[1, 2, 3] for _ in rows],
        trainer_state=object(),
        log_extra=lambda column, values: None,
        log_metric=lambda name, value: None,
    )


# ── the sizes, with the defaults ────────────────────────────────────────────────────────────────────────────────


def test_cohere_sdk_reranks_1000_documents(serve_url: str) -> None:
    docs = [document(i) for i in range(1000)]
    with httpx.Client(timeout=300) as http:
        co = cohere.ClientV2(base_url=serve_url, api_key="unused while auth is off", httpx_client=http)
        reranked = co.rerank(model="rerank-v3.5", query=QUESTION, documents=docs, top_n=10)
    assert len(reranked.results) == 10 and len({r.index for r in reranked.results}) == 10
    assert all(0 <= r.relevance_score <= 1 for r in reranked.results)
    assert reranked.meta is not None and reranked.meta.billed_units is not None
    assert reranked.meta.billed_units.search_units == 10  # Cohere's 1 per 100 documents


@pytest.mark.parametrize("size", [64, 128])
def test_trl_reward_with_group_size(serve_url: str, size: int) -> None:
    judge = PCFJudgeReward(serve_url, group_size=size)
    rewards = trl_call(judge, completions(f"trl {size}", size))
    assert len(rewards) == size and all(r is not None and 0 <= r <= 1 for r in rewards)
    assert judge.failures.failed_requests == 0 and judge.failures.dropped_rewards == 0


@pytest.mark.parametrize(("prompts", "samples"), [(32, 8), (16, 16)])
def test_openrlhf_get_reward(serve_url: str, prompts: int, samples: int) -> None:
    queries, prompt_list, labels = [], [], []
    for p in range(prompts):
        prompt = chat_prompt(f"[openrlhf {prompts}x{samples}] Question {p}: {QUESTION}")
        for s in range(samples):
            queries.append(prompt + f"Saturn, with {p * samples + s} moons.<|im_end|>")
            prompt_list.append(prompt)
            labels.append("Saturn")
    url = f"{serve_url}/get_reward"
    answer = asyncio.run(openrlhf_fetch_rewards_via_http([url], queries, prompt_list, labels))[0]  # type: ignore[no-untyped-call]
    assert len(answer["rewards"]) == prompts * samples and all(0 <= r <= 1 for r in answer["rewards"])
    assert answer["extra_logs"]["pcfj_group_size"] == [float(samples)] * (prompts * samples)


def test_verl_batch_reward_over_256_samples(serve_url: str) -> None:
    rows = [(p, r) for p in range(64) for r in range(4)]  # 64 groups of 4: 64 × 7 = 448 calls in one request
    scores = verl_integration.compute_score_batch(
        data_sources=["moons"] * len(rows),
        solution_strs=[f"Saturn has {p + r} moons." for p, r in rows],
        ground_truths=["Saturn"] * len(rows),
        extra_infos=[{"index": p, "question": f"[verl 256] {p}: {QUESTION}"} for p, _ in rows],
        url=serve_url,
    )
    assert len(scores) == 256 and all(0 <= s["score"] <= 1 and s["group_size"] == 4.0 for s in scores)


def test_listwise_100_candidates(serve_url: str) -> None:
    with pcfjudge.Client(serve_url) as judge:
        verdict = judge.listwise(QUESTION, [f"Candidate {i}: Saturn." for i in range(100)], include_runs=False)
    assert len(verdict.candidates) == 100 and verdict.usage.backend_calls <= 28  # 7 windows × 4 rounds


# ── failures are loud ───────────────────────────────────────────────────────────────────────────────────────────


def test_a_refused_request_raises_with_the_services_detail(serve_url: str) -> None:
    too_big = PCFJudgeReward(serve_url, group_size=300)  # > PCFJ_MAX_GROUP_SIZE (256)
    with pytest.raises(RewardRequestRefused, match=r"PCFJ_MAX_GROUP_SIZE") as refused:
        trl_call(too_big, completions("trl refused", 4))
    assert refused.value.status == 422 and "group_size" in refused.value.detail
    assert too_big.failures.failed_requests == 0  # raised, not counted as transient

    async def trl_async() -> list[float | None]:  # TRL's async path: the refusal cancels the batch's other requests
        rows = completions("trl refused async", 4)
        try:
            return await too_big.acall(prompts=[r["prompt"] for r in rows], completions=[r["completion"] for r in rows])
        finally:
            await too_big.aclose()

    with pytest.raises(RewardRequestRefused, match=r"PCFJ_MAX_GROUP_SIZE"):
        asyncio.run(trl_async())

    async def verl_one() -> None:
        extra = {"index": 1, "question": QUESTION}
        try:  # on_error="nan" is for judgments that failed, not for a request the service refuses
            await verl_integration.compute_score(
                "moons", "Saturn.", "Saturn", extra, url=serve_url, group_size=300, on_error="nan"
            )
        finally:
            await verl_integration.aclose_clients()

    with pytest.raises(RewardRequestRefused, match=r"HTTP 422 validation_error: group_size: at most 256"):
        asyncio.run(verl_one())


def test_a_closed_port_gives_none_with_a_warning_and_a_count(caplog: pytest.LogCaptureFixture) -> None:
    judge = PCFJudgeReward(f"http://127.0.0.1:{free_port()}", retry=NO_RETRY)
    before = reward_service.FAILURES.dropped_rewards
    with caplog.at_level(logging.WARNING, logger="pcfjudge.integrations"):
        rewards = trl_call(judge, completions("closed", 4))
    assert rewards == [None] * 4
    assert judge.failures.failed_requests == 1 and judge.failures.dropped_rewards == 4
    assert "ConnectError" in (judge.failures.last_error or "")
    assert reward_service.FAILURES.dropped_rewards == before + 4
    [record] = [r for r in caplog.records if r.name == "pcfjudge.integrations"]
    assert record.levelno == logging.WARNING and "ConnectError" in record.getMessage()
    assert "4 rewards dropped" in record.getMessage()


def test_a_503_gives_none_or_nan_with_a_warning_and_a_count(serve_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with FlakyProxy(serve_url, ["503", "503"], retry_after="1") as proxy:
        judge = PCFJudgeReward(proxy.url, retry=NO_RETRY)
        with caplog.at_level(logging.WARNING, logger="pcfjudge.integrations"):
            rewards = trl_call(judge, completions("flaky", 3))

            async def verl_one() -> dict[str, float]:
                try:
                    extra = {"index": 2, "question": QUESTION}
                    return await verl_integration.compute_score(
                        "moons", "Saturn.", "Saturn", extra, url=proxy.url, retries=0, on_error="nan"
                    )
                finally:
                    await verl_integration.aclose_clients()

            nan = asyncio.run(verl_one())
    assert rewards == [None] * 3 and math.isnan(nan["score"])
    assert judge.failures.failed_requests == 1 and judge.failures.dropped_rewards == 3
    messages = [r.getMessage() for r in caplog.records if r.name == "pcfjudge.integrations"]
    assert len(messages) == 2 and all("HTTP 503" in m for m in messages), messages
    assert "3 rewards dropped" in messages[0] and "1 rewards dropped" in messages[1]
