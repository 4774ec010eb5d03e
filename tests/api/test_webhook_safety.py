"""Issue 37 items 2, 3 and 13: webhooks cannot reach inside, cannot be used as a port scanner, and one API key's
receiver cannot hold up another key's webhooks.

* every textual form of an inner address (``127.1``, ``2130706433``, ``0x7f000001``, ``017700000001``, ``0``,
  ``::ffff:127.0.0.1``, private, link-local, multicast, shared) is refused at submission unless PCFJ_WEBHOOK_ALLOW
  allows it, and over a real socket a webhook pointing back at the running service is refused in all of them;
* the delivery resolves the host again and connects to the address it checked (a name that rebinds to 127.0.0.1
  after submission is refused, nothing is sent), keeping the URL's Host;
* a failed delivery says only its class: a closed port and a Redis answer alike ("no answer"), an HTTP error as
  "5xx";
* a key whose receiver never answers holds at most ``webhooks.PER_KEY`` connections: another key's webhook arrives
  at once (it came 7.1 s late behind 150 stuck ones).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from pcfjudge.api.jobs import webhook_address, webhooks
from pcfjudge.cache.job_store import MemoryJobStore
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services
from tests.support.processes import serve_process
from tests.support.redis_server import RedisServer
from tests.support.waits import free_port
from tests.support.webhook_receiver import Receiver

SECRET = "whsec-test-0123456789"
LISTWISE = {"question": "How many moons does Mars have?", "candidates": ["Two.", "One.", "None."], "k": 3}
KEYS = "alice:alice-key-0123456789,bob:bob-key-0123456789"
ALICE, BOB = {"Authorization": "Bearer alice-key-0123456789"}, {"Authorization": "Bearer bob-key-0123456789"}
INSIDE = [
    "127.1",
    "2130706433",
    "0x7f000001",
    "017700000001",
    "0",
    "[::ffff:127.0.0.1]",
    "[::1]",
    "localhost",
    "10.0.0.7",
    "172.16.1.1",
    "192.168.1.1",
    "169.254.169.254",
    "[fe80::1]",
    "100.64.0.1",
    "224.0.0.1",
    "240.0.0.1",
    "[::]",
]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


async def ended(client: httpx.AsyncClient, location: str, headers: dict[str, str] | None = None) -> None:
    for _ in range(500):
        if (await client.get(location, headers=headers)).json()["status"] not in ("queued", "running"):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"job {location} did not end")


async def webhook_of(client: httpx.AsyncClient, location: str, headers: dict[str, str] | None = None) -> Any:
    for _ in range(500):
        job = (await client.get(location, headers=headers)).json()
        if job["webhook"]["delivered"] is not None:
            return job["webhook"]
        await asyncio.sleep(0.02)
    raise AssertionError(f"webhook not tried: {job}")


# ── every form of an inner address is refused ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("host", INSIDE)
async def test_an_inner_address_in_any_form_is_refused_unless_allowed(host: str) -> None:
    url = f"http://{host}:8123/hook"
    submit = {"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": url}
    async with app_with_services(Settings(webhook_secret=SECRET)) as (client, services):
        refused = await client.post("/v1/jobs", json=submit)
        assert isinstance(services.jobs, MemoryJobStore) and services.jobs.jobs == {}
    assert refused.status_code == 422, refused.json()
    assert "PCFJ_WEBHOOK_ALLOW" in refused.json()["detail"] and refused.json()["errors"][0]["field"] == "webhook_url"


async def test_the_operator_allows_a_network_or_a_host_by_name() -> None:
    settings = Settings(webhook_secret=SECRET, webhook_allow="10.0.0.0/8, hooks.internal")
    async with app_with_services(settings) as (client, _):
        answers = [
            await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": u})
            for u in ("http://10.1.2.3/h", "http://hooks.internal/h", "http://192.168.0.1/h")
        ]
    assert [a.status_code for a in answers] == [202, 202, 422]


@pytest.mark.slow
def test_a_webhook_back_at_the_running_service_is_refused_in_every_form() -> None:
    env = {"PCFJ_API_KEYS": KEYS, "PCFJ_WEBHOOK_SECRET": SECRET, "PCFJ_SIM_LATENCY_MS": "0"}
    with serve_process(env=env) as url:
        port = url.rsplit(":", 1)[1]
        answers = {
            host: httpx.post(
                f"{url}/v1/jobs",
                json={"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": f"http://{host}:{port}/"},
                headers=ALICE,
            )
            for host in ("127.1", "2130706433", "0x7f000001", "017700000001", "0", "[::ffff:127.0.0.1]")
        }
    assert {host: a.status_code for host, a in answers.items()} == dict.fromkeys(answers, 422)


# ── the delivery checks again, and connects where it checked ─────────────────────────────────────────────────────


async def test_a_name_that_rebinds_inside_after_submission_is_refused_at_delivery(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter([["93.184.216.34"]])  # public when submitted, then 127.0.0.1 (the receiver) at delivery

    async def lookup(host: str, port: int) -> list[str]:
        return next(answers, ["127.0.0.1"])

    monkeypatch.setattr(webhook_address, "lookup", lookup)
    url = f"http://rebind.example:{receiver.port}/hook"
    async with app_with_services(Settings(webhook_secret=SECRET)) as (client, _):
        accepted = await client.post(
            "/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": url}
        )
        outcome = await webhook_of(client, accepted.headers["location"])
    assert accepted.status_code == 202
    assert outcome["delivered"] is False and outcome["attempts"] == 1 and outcome["status"] is None
    assert outcome["error"].startswith("delivery refused") and "loopback" in outcome["error"]
    assert receiver.received == []  # nothing was sent inside


async def test_the_delivery_connects_to_the_address_it_checked_and_keeps_the_host(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def lookup(host: str, port: int) -> list[str]:
        return ["127.0.0.1"] if host == "hooks.example" else []

    monkeypatch.setattr(webhook_address, "lookup", lookup)
    url = f"http://hooks.example:{receiver.port}/hook"
    async with app_with_services(Settings(webhook_secret=SECRET, webhook_allow="127.0.0.0/8")) as (client, _):
        accepted = await client.post(
            "/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": url}
        )
        outcome = await webhook_of(client, accepted.headers["location"])
    assert outcome["delivered"] is True and outcome["status"] == 200
    assert receiver.received[0][0]["Host"] == f"hooks.example:{receiver.port}"


# ── a failure says its class, not what answered ──────────────────────────────────────────────────────────────────


async def test_a_closed_port_and_a_redis_look_the_same(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhooks, "WAITS", (0.01, 0.01, 0.01))
    closed = free_port()
    outcomes = []
    async with app_with_services(Settings(webhook_secret=SECRET, webhook_allow="127.0.0.1")) as (client, _):
        for port in (closed, redis_server.port):
            submit = {"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": f"http://127.0.0.1:{port}/"}
            accepted = await client.post("/v1/jobs", json=submit)
            outcome = await webhook_of(client, accepted.headers["location"])
            outcomes.append({k: v for k, v in outcome.items() if k != "url"})
    assert (
        outcomes[0] == outcomes[1] == {"delivered": False, "attempts": 4, "status": None, "error": webhooks.NO_ANSWER}
    )


# ── one key's stuck receiver does not hold up another key's webhooks ─────────────────────────────────────────────


async def test_a_keys_receiver_that_never_answers_does_not_delay_another_keys_webhook(receiver: Receiver) -> None:
    stuck = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    stuck.bind(("127.0.0.1", 0))
    stuck.listen(512)
    settings = Settings(
        api_keys=KEYS, webhook_secret=SECRET, webhook_allow="127.0.0.1", max_jobs_per_key=500, sim_latency_ms=0
    )
    try:
        async with app_with_services(settings) as (client, _):
            hung = {
                "endpoint": "/judge/listwise",
                "request": LISTWISE,
                "webhook_url": f"http://127.0.0.1:{stuck.getsockname()[1]}/",
            }
            locations = [
                (await client.post("/v1/jobs", json=hung, headers=ALICE)).headers["location"] for _ in range(120)
            ]
            for location in locations:  # alice's jobs end, and their webhooks get stuck
                await ended(client, location, ALICE)
            await asyncio.sleep(0.5)
            good = {
                "endpoint": "/judge/listwise",
                "request": LISTWISE,
                "webhook_url": f"http://127.0.0.1:{receiver.port}/",
            }
            accepted = await client.post("/v1/jobs", json=good, headers=BOB)
            outcome = await webhook_of(client, accepted.headers["location"], BOB)
            job = (await client.get(accepted.headers["location"], headers=BOB)).json()
    finally:
        stuck.close()
    assert outcome["delivered"] is True and len(receiver.received) == 1
    finished = datetime.fromisoformat(job["finished_at"].replace("Z", "+00:00")).timestamp()
    assert receiver.received[0][2] - finished < 1.5  # at once, not behind alice's stuck connections
