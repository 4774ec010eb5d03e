"""OpenRLHF's and slime's reward clients, reproduced exactly, against ``pcfjudge serve`` over the fake provider.

Neither framework's client imports without torch (OpenRLHF's ``openrlhf.utils`` pulls ``get_strategy``; slime's
``rm_hub`` pulls ``slime.utils.types``), so the functions below copy their request code line for line, aiohttp and
all, from:
  * OpenRLHF/OpenRLHF@3c3be6234e0cb353e76bb8019947db9dfe99fca7 openrlhf/utils/agent.py
    ``SingleTurnAgentExecutor._fetch_rewards_via_http`` and how ``execute`` reads its answer;
  * THUDM/slime@624b824a898ab0ec1fcb4d373004c7f3852bf515 slime/rollout/rm_hub/__init__.py ``remote_rm`` (and
    ``--reward-key``: ``sample.reward[args.reward_key]``, slime/utils/types.py).
"""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx
import pytest

from tests.conftest import K
from tests.support.inprocess import FakeProvider

pytestmark = pytest.mark.slow


# ── OpenRLHF: openrlhf/utils/agent.py (commit above), copied ──────────────────────────────────────────────────────


async def openrlhf_fetch_rewards_via_http(reward_endpoints, queries_list, prompts_list, labels_list):  # type: ignore[no-untyped-def]
    num_servers = len(reward_endpoints)
    batch_size = (len(queries_list) + num_servers - 1) // num_servers
    timeout = aiohttp.ClientTimeout(total=180)

    tasks = []
    for i, rm in enumerate(reward_endpoints):
        start_idx = i * batch_size
        end_idx = min((i + 1) * batch_size, len(queries_list))
        payload = {
            "query": queries_list[start_idx:end_idx],
            "prompts": prompts_list[start_idx:end_idx],
            "labels": labels_list[start_idx:end_idx],
        }

        async def _post_request(url, data, try_max_times=5):  # type: ignore[no-untyped-def]
            for _ in range(try_max_times):
                try:
                    async with aiohttp.ClientSession(timeout=timeout) as session:  # noqa: SIM117 (verbatim)
                        async with session.post(url, json=data) as response:
                            response.raise_for_status()
                            return await response.json()
                except aiohttp.ClientError:
                    pass
                except Exception:
                    pass
                await asyncio.sleep(1)

            raise RuntimeError(f"Request error for {try_max_times} times, returning None. Please check the API server.")

        tasks.append(asyncio.create_task(_post_request(rm, payload)))
    return await asyncio.gather(*tasks)


async def openrlhf_reward(url: str, prompt: str, response: str, label: str) -> dict[str, Any]:
    """One sample as ``SingleTurnAgentExecutor.execute`` asks for it: query = prompt + response (special tokens kept)."""
    query = prompt + response + "<|im_end|>"
    rewards_info = (await openrlhf_fetch_rewards_via_http([url], [query], [prompt], [label]))[0]
    score_value = rewards_info.get("scores")
    if score_value is None:
        score_value = rewards_info.get("rewards")
    return {"reward": rewards_info.get("rewards"), "scores": score_value, "extra_logs": rewards_info["extra_logs"]}


def chat_prompt(question: str) -> str:
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


QUESTION = "What is the boiling point of water at sea level in Celsius?"
ANSWERS = ["100 degrees Celsius.", "It boils at 90 C.", "About 100 C at standard pressure.", "212."]


async def direct(url: str, prompt: str, responses: list[str], reference: str | None = None) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=60) as client:
        samples = [{"prompt": prompt, "response": r, "reference": reference} for r in responses]
        reply = await client.post(f"{url}/v1/reward", json={"samples": samples})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


async def test_openrlhf_one_sample_requests_become_one_group(judge_url: str, fake: FakeProvider) -> None:
    prompt = chat_prompt(f"[openrlhf] {QUESTION}")
    url = f"{judge_url}/get_reward?group_size=4&group_wait_ms=60000"
    got = await asyncio.gather(*(openrlhf_reward(url, prompt, a, "100") for a in ANSWERS))
    assert fake.calls(last=0)["calls"] == {"openai": K}  # 4 requests, one group judgment of K calls
    same = await direct(judge_url, prompt, ANSWERS, reference="100")  # the end marker was stripped: same responses
    assert [g["reward"] for g in got] == [[r] for r in same["rewards"]] and same["usage"]["backend_calls"] == 0
    for g in got:
        assert g["scores"] == g["reward"] and 0 <= g["reward"][0] <= 1
        assert g["extra_logs"]["pcfj_group_size"] == [4.0] and g["extra_logs"]["pcfj_pointwise"] == [0.0]


async def test_openrlhf_shards_a_batch_over_urls_and_an_empty_shard_is_fine(judge_url: str) -> None:
    prompt = chat_prompt(f"[shards] {QUESTION}")
    urls = [f"{judge_url}/get_reward", f"{judge_url}/get_reward"]
    both = await openrlhf_fetch_rewards_via_http(urls, [prompt + ANSWERS[0]], [prompt], ["100"])
    assert both[1] == {"rewards": [], "scores": [], "extra_logs": {}}
    numeric = await openrlhf_fetch_rewards_via_http(urls[:1], [prompt + "100"], [prompt], [100])  # a JSON number
    assert numeric[0]["extra_logs"]["pcfj_pointwise"] == [1.0]
    assert len(both[0]["rewards"]) == 1 and both[0]["extra_logs"]["pcfj_pointwise"] == [1.0]


async def test_openrlhf_payload_mistakes_are_422_naming_the_index(judge_url: str) -> None:
    async with httpx.AsyncClient(base_url=judge_url, timeout=30) as client:
        wrong = await client.post(
            "/get_reward", json={"query": ["Q: a\nA: x", "Other prompt: y"], "prompts": ["Q: a\nA: ", "Q: b\nA: "]}
        )
        lengths = await client.post("/get_reward", json={"query": ["a b"], "prompts": ["a ", "b "], "labels": [None]})
    assert wrong.status_code == 422 and "query.1" in wrong.json()["detail"]
    assert lengths.status_code == 422 and "prompts" in lengths.json()["detail"]


async def test_openrlhf_gets_503_with_retry_after_and_its_own_loop_retries_never_a_zero(
    judge_url: str, fake: FakeProvider
) -> None:
    fake.faults(always="503", retry_after=2)
    prompt = chat_prompt(f"[failing] {QUESTION}")
    async with httpx.AsyncClient(timeout=60) as client:
        reply = await client.post(
            f"{judge_url}/get_reward", json={"query": [prompt + "100"], "prompts": [prompt], "labels": ["100"]}
        )
    assert reply.status_code == 503 and reply.headers["retry-after"] == "2"
    assert reply.json()["error"] == "backend_overloaded" and "rewards" not in reply.json()
    with pytest.raises(RuntimeError, match="5 times"):  # OpenRLHF then logs it and leaves the reward None
        await openrlhf_reward(f"{judge_url}/get_reward", prompt, "100", "100")
    assert fake.calls(last=0)["calls"] == {"openai": 1 + 5}  # every one of its 5 tries reached the judge


# ── slime: slime/rollout/rm_hub/__init__.py (commit above), copied ────────────────────────────────────────────────


class SlimeRM:
    """``remote_rm`` with its module-level shared session, as one object per test (it is bound to one loop)."""

    def __init__(self) -> None:
        self._shared_session: aiohttp.ClientSession | None = None

    def _get_shared_session(self) -> aiohttp.ClientSession:
        if self._shared_session is None or self._shared_session.closed:
            connector = aiohttp.TCPConnector(
                limit=64,
                enable_cleanup_closed=True,
            )
            timeout = aiohttp.ClientTimeout(total=120)
            self._shared_session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        return self._shared_session

    async def remote_rm(self, args, sample, max_retries: int = 10):  # type: ignore[no-untyped-def]
        payload = {
            "prompt": sample.prompt,
            "response": sample.response,
            "label": sample.label,
        }
        session = self._get_shared_session()
        for attempt in range(max_retries):
            try:
                async with session.post(args.rm_url, json=payload) as resp:
                    resp.raise_for_status()
                    return await resp.json()
            except Exception:
                if attempt + 1 >= max_retries:
                    raise
                backoff = min(2**attempt, 30) + random.random()
                await asyncio.sleep(backoff)

    async def aclose(self) -> None:
        if self._shared_session is not None:
            await self._shared_session.close()


async def test_slime_remote_rm_with_reward_key_and_group_rm(judge_url: str, fake: FakeProvider) -> None:
    args = SimpleNamespace(rm_url=f"{judge_url}/v1/reward/one?group_size=4&group_wait_ms=60000", reward_key="reward")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"[slime] {QUESTION}"}]
    group = [SimpleNamespace(prompt=messages, response=a, label="100") for a in ANSWERS]
    rm = SlimeRM()
    try:  # --group-rm: batched_async_rm gathers remote_rm over the group's samples
        answers = await asyncio.gather(*(rm.remote_rm(args, s) for s in group))
    finally:
        await rm.aclose()
    rewards = [a[args.reward_key] for a in answers]  # Sample.get_reward_value with --reward-key reward
    assert fake.calls(last=0)["calls"] == {"openai": K}
    same = await direct(judge_url, f"system: Be brief.\n\nuser: [slime] {QUESTION}", ANSWERS, reference="100")
    assert rewards == same["rewards"] and same["usage"]["backend_calls"] == 0
    assert {(a["group_size"], a["scoring"], a["reference"]) for a in answers} == {(4, "group", True)}


async def test_slime_numeric_labels_and_a_plain_prompt(judge_url: str) -> None:
    rm = SlimeRM()
    try:
        answer = await rm.remote_rm(
            SimpleNamespace(rm_url=f"{judge_url}/v1/reward/one"),
            SimpleNamespace(prompt="[plain] 6 times 7?", response="42", label=42),
        )
    finally:
        await rm.aclose()
    assert answer["scoring"] == "pointwise" and answer["reference"] is True and 0 <= answer["reward"] <= 1


async def test_slime_gets_503_and_raises_after_its_retries_never_a_zero(judge_url: str, fake: FakeProvider) -> None:
    fake.faults(always="429", retry_after=1)
    rm = SlimeRM()
    sample = SimpleNamespace(prompt="[slime failing] 2+2?", response="4", label="4")
    try:
        with pytest.raises(aiohttp.ClientResponseError) as caught:
            await rm.remote_rm(SimpleNamespace(rm_url=f"{judge_url}/v1/reward/one"), sample, max_retries=2)
    finally:
        await rm.aclose()
    assert caught.value.status == 503 and caught.value.headers is not None
    assert caught.value.headers["Retry-After"] == "1"


async def test_openrlhf_get_reward_with_64_completions_of_one_prompt(judge_url: str, fake: FakeProvider) -> None:
    """One /get_reward batch of 64 queries of one prompt: one group past one window (4 rounds of 4 windows)."""
    prompt = chat_prompt(f"[openrlhf64] {QUESTION}")
    answers = [f"Answer {i}: {90 + i % 12} degrees." for i in range(64)]
    got = await openrlhf_fetch_rewards_via_http(
        [f"{judge_url}/get_reward"], [prompt + a for a in answers], [prompt] * 64, ["100"] * 64
    )
    assert fake.calls(last=0)["calls"] == {"openai": 16}
    same = await direct(judge_url, prompt, answers, reference="100")
    assert got[0]["rewards"] == same["rewards"] and len(got[0]["rewards"]) == 64
    assert None not in got[0]["rewards"] and same["usage"]["backend_calls"] == 0
