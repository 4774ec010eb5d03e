"""Every door of the door list, in every mode, with every form of ``model`` (issue 47): the same resolution, the
same result, the same refusal.

The doors are read from ``pcfjudge.doors.door_list.DOORS`` (a door added there is tested here once it has a body
below); the modes are ``now``, ``stream`` and ``job`` (``Prefer: respond-async``, then the job's ``response``); the
model forms are the default, a simulated model, a provider string (OpenAI's wire, to a fake provider), a named jury
(``PCFJ_JURIES``), a jury as a list, a fleet by ``fleet:<name>`` and by its bare ``model_name`` (the fake provider again,
as a LiteLLM models file declares it), and a name this server does not know: a 422 in the door's own error shape
naming what is available, in every mode (OpenAI's 400 on the chat door).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from pcfjudge.client.jobs import REQUESTS
from pcfjudge.doors.door_list import DOORS, JOB_ROUTES
from pcfjudge.settings import Settings

from tests.support.basics import OPENAI_KEY
from tests.support.inprocess import FakeProvider, app_with_services, running_fake

QUESTION = "What is the capital of Australia?"
ANSWERS = ["Canberra.", "Sydney.", "Melbourne."]
MARKED = "Which answer is right?\n" + "".join(
    f"<<<candidate {label}>>>\n{text}\n<<<end>>>\n" for label, text in zip("ABC", ANSWERS, strict=True)
)

BODIES: dict[str, dict[str, Any]] = {  # one request per job route; "model" is added per case
    "/judge/listwise": {"question": QUESTION, "candidates": ANSWERS, "k": 2},
    "/judge/pairwise": {"question": QUESTION, "response_a": ANSWERS[0], "response_b": ANSWERS[1]},
    "/v1/rerank": {"query": QUESTION, "documents": ANSWERS, "pcfjudge": {"k": 2}},
    "/v2/rerank": {"query": QUESTION, "documents": ANSWERS, "pcfjudge": {"k": 2}},
    "/v1/reward": {"k": 2, "samples": [{"prompt": QUESTION, "response": text} for text in ANSWERS]},
    "/v1/chat/completions": {"messages": [{"role": "user", "content": MARKED + "Answer [[X]] for the best."}]},
}
FORMS: dict[str, tuple[Any, str | None]] = {  # the model sent → the model the answer names (None: refused)
    "default": (None, "sim:default"),
    "sim": ("sim:oracle", "sim:oracle"),
    "provider": ("openai:judge-x", "openai:judge-x"),
    "named jury": ("panel", "panel"),
    "jury list": (["sim:default", "sim:oracle"], "sim:default,sim:oracle"),
    "fleet": ("fleet:judge", "fleet:judge"),
    "bare fleet": ("judge", "fleet:judge"),
    "unknown": ("nosuch", None),
    "empty": ("", None),  # issue 49 row 9: was the default model, silently
}
REFUSED = {"unknown": "unknown model 'nosuch'", "empty": "model must not be empty"}
MODES = ("now", "stream", "job")
CALLS_FAKE = {"provider", "fleet", "bare fleet"}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with running_fake() as server:
        yield server


@pytest.fixture
async def client(fake: FakeProvider, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    models = tmp_path / "models.yaml"
    models.write_text(
        "model_list:\n  - model_name: judge\n    litellm_params:\n      model: hosted_vllm/judge-x\n"
        f"      api_base: {fake.url}/v1\n"
    )
    settings = Settings(
        models_file=models,
        openai_api_key=OPENAI_KEY,
        openai_base_url=f"{fake.url}/v1",
        anthropic_api_key=None,
        default_model="sim:default",
        allowed_models=["sim:*", "openai:*", "fleet:*"],
        juries={"panel": ["sim:default", "sim:oracle"]},
        retry_base_s=0.001,
        retry_max_s=0.01,
    )
    async with app_with_services(settings) as (http, _):
        yield http


async def _now(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = await client.post(path, json=body)
    return response.status_code, response.json()


async def _stream(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    options = {"pcfjudge": {**body["pcfjudge"], "stream": True}} if "pcfjudge" in body else {"stream": True}
    streamed = body | options
    response = await client.post(path, json=streamed)
    if response.headers.get("content-type", "").startswith("application/json"):  # refused before any event
        return response.status_code, response.json()
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    data = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    if path == "/v1/chat/completions":  # OpenAI's chunks: the first carries the model
        assert data[-1] == "[DONE]"
        return 200, orjson.loads(data[0])
    events = [line[len("event: ") :] for line in response.text.splitlines() if line.startswith("event: ")]
    assert events[-1] == "result", response.text
    return 200, orjson.loads(data[-1])


async def _job(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = await client.post(path, json=body, headers={"Prefer": "respond-async"})
    if response.status_code != 202:
        return response.status_code, response.json()
    where = response.headers["Location"]
    for _ in range(3000):
        job = (await client.get(where)).json()
        if job["status"] in ("succeeded", "failed"):
            return int(job["http_status"]), job["response"]
        await asyncio.sleep(0.01)
    pytest.fail(f"the job of {path} did not end: {job}")


SEND = {"now": _now, "stream": _stream, "job": _job}


def test_the_door_list_declares_each_job_route_once() -> None:
    paths = [job.path for door in DOORS for job in door.jobs]
    assert len(paths) == len(set(paths)) and set(paths) == set(JOB_ROUTES) == set(REQUESTS) == set(BODIES)
    names = [door.name for door in DOORS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("form", list(FORMS))
async def test_every_door_every_mode_resolves_model_the_same_way(
    client: httpx.AsyncClient, fake: FakeProvider, form: str
) -> None:
    sent, expected = FORMS[form]
    fake.reset()
    for path, template in BODIES.items():
        body = template if sent is None else {**template, "model": sent}
        answers = await asyncio.gather(*(SEND[mode](client, path, body) for mode in MODES))
        for mode, (status, data) in zip(MODES, answers, strict=True):
            where = f"{form} on {path} ({mode})"
            if expected is None:
                chat = path == "/v1/chat/completions"  # OpenAI's shape: an invalid request is a 400
                assert status == (400 if chat else 422), (where, data)
                message = data["error"]["message"] if chat else data["detail"]
                assert REFUSED[form] in message and "fleet:judge (or judge)" in message, (where, data)
                assert "panel" in message and "sim:default" in message, (where, data)
                continue
            assert status == 200, (where, data)
            assert data["model"] == expected, (where, data)
    served = fake.calls(last=1)["calls"]
    assert bool(sum(served.values())) == (form in CALLS_FAKE), (form, served)
