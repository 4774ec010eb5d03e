"""Issue 49 row 4: one price, every door. A chat request's max_tokens (or max_completion_tokens) of 50,000,000 under
PCFJ_MAX_COST_USD_PER_REQUEST was sent to the provider as is and priced at PCFJ_MAX_OUTPUT_TOKENS. Now it is capped
by PCFJ_MAX_OUTPUT_TOKENS before it is sent, the plan is priced at what the request allows, and the cost cap refuses
a chat request, direct or as a job, before any call, as it refuses a listwise one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from pcfjudge.settings import Settings

from tests.support.basics import OPENAI_KEY
from tests.support.inprocess import FakeProvider, app_with_services, running_fake

MARKED = "Which answer is right?\n<<<candidate A>>>\nCanberra.\n<<<end>>>\n<<<candidate B>>>\nSydney.\n<<<end>>>\n"
PRICE = (1000.0, 100_000.0)  # USD per million (input, output) tokens: output dominates


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with running_fake() as server:
        yield server


def settings(fake: FakeProvider, cap_usd: float) -> Settings:
    return Settings(
        openai_api_key=OPENAI_KEY,
        openai_base_url=f"{fake.url}/v1",
        anthropic_api_key=None,
        default_model="openai:judge-x",
        prices={"openai:judge-x": PRICE},
        max_cost_usd_per_request=cap_usd,
        max_output_tokens=2048,
        retry_base_s=0.001,
        retry_max_s=0.01,
    )


@pytest.fixture
async def client(fake: FakeProvider) -> AsyncIterator[httpx.AsyncClient]:
    fake.reset()
    # two orders × 2,048 output tokens at 0.1 USD a token is about 410 USD: a cap of 50 USD admits 2 × 200 tokens
    async with app_with_services(settings(fake, cap_usd=50.0)) as (http, _):
        yield http


def chat(**extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": MARKED + "Answer [[A]] or [[B]]."}], **extra}


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
async def test_fifty_million_tokens_are_refused_by_the_cost_cap_direct_and_as_a_job(
    client: httpx.AsyncClient, fake: FakeProvider, field: str
) -> None:
    direct = await client.post("/v1/chat/completions", json=chat(**{field: 50_000_000}))
    job = await client.post(
        "/v1/jobs", json={"endpoint": "/v1/chat/completions", "request": chat(**{field: 50_000_000})}
    )
    listwise = await client.post("/judge/listwise", json={"question": "Q?", "candidates": ["a", "b"], "k": 2})
    assert direct.status_code == 400, direct.text  # OpenAI's shape on the chat door
    assert "PCFJ_MAX_COST_USD_PER_REQUEST" in direct.json()["error"]["message"]
    assert job.status_code == 422 and "PCFJ_MAX_COST_USD_PER_REQUEST" in job.json()["detail"]  # /v1/jobs: ours
    assert listwise.status_code == 422, listwise.text  # the same cap refuses the listwise door
    assert "PCFJ_MAX_COST_USD_PER_REQUEST" in listwise.json()["detail"]
    assert fake.calls(last=0)["completions"].get("openai", 0) == 0  # refused before any call


async def test_a_request_that_allows_fewer_tokens_is_priced_at_them_and_sent_them(
    client: httpx.AsyncClient, fake: FakeProvider
) -> None:
    small = await client.post("/v1/chat/completions", json=chat(max_tokens=100))
    assert small.status_code == 200, small.text  # 2 × 100 output tokens: within the cap
    assert (
        fake.last_body()["max_completion_tokens" if "max_completion_tokens" in fake.last_body() else "max_tokens"]
        == 100
    )


async def test_a_request_above_the_servers_output_cap_is_sent_the_cap(fake: FakeProvider) -> None:
    fake.reset()
    async with app_with_services(settings(fake, cap_usd=10_000.0)) as (http, _):
        answer = await http.post("/v1/chat/completions", json=chat(max_tokens=50_000_000))
    assert answer.status_code == 200, answer.text
    sent = fake.last_body()
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == 2048  # PCFJ_MAX_OUTPUT_TOKENS, not 50 million
