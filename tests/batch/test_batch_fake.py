"""The fake provider's batch endpoints, driven by the official SDKs: OpenAI Files + Batches (``client.files``,
``client.batches``) and Anthropic Message Batches (``client.messages.batches``), with delays, per-request faults,
expiry, cancellation and the input checks each provider makes."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from anthropic import Anthropic
from openai import OpenAI

from tests.support.basics import ANTHROPIC_KEY, CANDIDATES, OPENAI_KEY
from tests.support.inprocess import FakeProvider, listwise_call


def _openai(fake: FakeProvider) -> OpenAI:
    return OpenAI(api_key=OPENAI_KEY, base_url=f"{fake.url}/v1", max_retries=0)


def _anthropic(fake: FakeProvider) -> Anthropic:
    return Anthropic(api_key=ANTHROPIC_KEY, base_url=fake.url, max_retries=0)


def _chat_body(order: tuple[int, ...] = (0, 1, 2)) -> dict[str, Any]:
    call = listwise_call([CANDIDATES[i] for i in order])
    return {
        "model": "judge-x",
        "messages": [{"role": "system", "content": call.system}, {"role": "user", "content": call.user}],
        "max_completion_tokens": 1024,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": call.schema_name, "schema": call.schema, "strict": True},
        },
    }


def _message_params(order: tuple[int, ...] = (0, 1, 2)) -> dict[str, Any]:
    call = listwise_call([CANDIDATES[i] for i in order])
    return {
        "model": "judge-y",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": call.system}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": call.user}]}],
        "tools": [{"name": call.schema_name, "input_schema": call.schema}],
        "tool_choice": {"type": "tool", "name": call.schema_name},
    }


ORDERS = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]


def _input_file(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _requests(n: int = 3) -> list[dict[str, Any]]:
    return [
        {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": _chat_body(ORDERS[i % 3])}
        for i in range(n)
    ]


def _lines(client: OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines() if line.strip()]


def _create(client: OpenAI, lines: list[dict[str, Any]]) -> openai.types.Batch:
    upload = client.files.create(file=("in.jsonl", _input_file(lines)), purpose="batch")
    return client.batches.create(
        input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"tag": "t1"}
    )


def test_openai_batch_runs_after_its_delay_and_answers_like_the_live_endpoint(fake: FakeProvider) -> None:
    fake.control.post("/_control/batches", json={"delay_polls": 1}).raise_for_status()
    with _openai(fake) as client:
        upload = client.files.create(file=("in.jsonl", _input_file(_requests())), purpose="batch")
        assert client.files.retrieve(upload.id).purpose == "batch"
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"tag": "t1"}
        )
        assert batch.status == "validating" and batch.metadata == {"tag": "t1"}
        assert client.batches.retrieve(batch.id).status == "in_progress"
        done = client.batches.retrieve(batch.id)
        assert done.status == "completed" and done.error_file_id is None
        assert done.request_counts is not None and done.request_counts.model_dump() == {
            "completed": 3,
            "failed": 0,
            "total": 3,
        }
        output = _lines(client, done.output_file_id)
        live = client.chat.completions.create(**_chat_body(ORDERS[1]))
        assert [line["custom_id"] for line in output] == ["r0", "r1", "r2"]
        answered = output[1]["response"]
        assert answered["status_code"] == 200 and output[1]["error"] is None
        assert json.loads(answered["body"]["choices"][0]["message"]["content"]) == json.loads(
            live.choices[0].message.content or ""
        )
        assert done.usage is not None and done.usage.input_tokens == sum(
            line["response"]["body"]["usage"]["prompt_tokens"] for line in output
        )
        assert [b.id for b in client.batches.list()] == [batch.id]


def test_openai_partial_failures_go_to_the_error_file(fake: FakeProvider) -> None:
    fake.control.post("/_control/batches", json={"faults": ["ok", "500", "refusal"]}).raise_for_status()
    with _openai(fake) as client:
        done = client.batches.retrieve(_create(client, _requests()).id)
        assert done.status == "completed"
        output, errors = _lines(client, done.output_file_id), _lines(client, done.error_file_id)
        assert [line["custom_id"] for line in output] == ["r0", "r2"]
        assert output[1]["response"]["body"]["choices"][0]["message"]["refusal"]
        assert [(e["custom_id"], e["response"]["status_code"]) for e in errors] == [("r1", 500)]
        assert "error" in errors[0]["response"]["body"]


def test_openai_expiry_reports_the_unprocessed_requests_expired(fake: FakeProvider) -> None:
    fake.control.post("/_control/batches", json={"expire_after": 1}).raise_for_status()
    with _openai(fake) as client:
        done = client.batches.retrieve(_create(client, _requests()).id)
        assert done.status == "expired" and done.expired_at is not None
        assert [line["custom_id"] for line in _lines(client, done.output_file_id)] == ["r0"]
        errors = _lines(client, done.error_file_id)
        assert [(e["custom_id"], e["error"]["code"], e["response"]) for e in errors] == [
            ("r1", "batch_expired", None),
            ("r2", "batch_expired", None),
        ]


def test_openai_cancel_stops_a_running_batch(fake: FakeProvider) -> None:
    fake.control.post("/_control/batches", json={"delay_polls": 10, "per_poll": 1}).raise_for_status()
    with _openai(fake) as client:
        batch = _create(client, _requests())
        assert client.batches.retrieve(batch.id).status == "in_progress"  # one request processed
        assert client.batches.cancel(batch.id).status == "cancelling"
        done = client.batches.retrieve(batch.id)
        assert done.status == "cancelled" and done.cancelled_at is not None
        assert [line["custom_id"] for line in _lines(client, done.output_file_id)] == ["r0"]
        assert {e["error"]["code"] for e in _lines(client, done.error_file_id)} == {"batch_cancelled"}
        with pytest.raises(openai.BadRequestError, match="Cannot cancel"):
            client.batches.cancel(batch.id)
    assert fake.control.get("/_control/batches").json()["served"] == {"openai": 1}


def test_openai_checks_the_input_file_as_openai_does(fake: FakeProvider) -> None:
    lines = _requests(2)
    lines[1]["custom_id"] = "r0"
    with _openai(fake) as client:
        failed = _create(client, lines)
        assert failed.status == "failed"
        assert failed.errors is not None and failed.errors.data is not None
        assert (failed.errors.data[0].code, failed.errors.data[0].line) == ("duplicate_custom_id", 2)
        upload = client.files.create(file=("in.jsonl", _input_file(_requests(1))), purpose="batch")
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="1h")  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError, match="purpose"):
            client.files.create(file=("in.jsonl", b"{}"), purpose="assistants")
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_nope")


def test_batch_endpoints_need_the_key(fake: FakeProvider) -> None:
    fake.faults(expect_key=OPENAI_KEY)
    with (
        OpenAI(api_key="sk-wrong", base_url=f"{fake.url}/v1", max_retries=0) as client,
        pytest.raises(openai.AuthenticationError),
    ):
        client.batches.list()


def _message_batch(client: Anthropic, n: int = 3) -> Any:
    requests = [{"custom_id": f"m{i}", "params": _message_params(ORDERS[i % 3])} for i in range(n)]
    return client.messages.batches.create(requests=requests)  # type: ignore[arg-type]


def test_anthropic_message_batch_lifecycle_and_results(fake: FakeProvider) -> None:
    fake.control.post("/_control/batches", json={"delay_polls": 1, "faults": ["ok", "500"]}).raise_for_status()
    with _anthropic(fake) as client:
        batch = _message_batch(client)
        assert batch.processing_status == "in_progress" and batch.results_url is None
        running = client.messages.batches.retrieve(batch.id)
        assert running.request_counts.processing == 3 and running.request_counts.succeeded == 0
        early = fake.control.get(f"/v1/messages/batches/{batch.id}/results", headers={"x-api-key": ANTHROPIC_KEY})
        assert early.status_code == 400 and "not available" in early.json()["error"]["message"]
        ended = client.messages.batches.retrieve(batch.id)
        assert ended.processing_status == "ended" and ended.ended_at is not None
        assert ended.request_counts.model_dump() == {
            "canceled": 0,
            "errored": 1,
            "expired": 0,
            "processing": 0,
            "succeeded": 2,
        }
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert results["m0"].type == "succeeded" and results["m1"].type == "errored"
        assert results["m1"].error.error.type == "api_error"
        message = results["m2"].message
        assert message.stop_reason == "tool_use" and message.content[0].type == "tool_use"
        assert [b.id for b in client.messages.batches.list()] == [batch.id]


def test_anthropic_expiry_and_cancellation(fake: FakeProvider) -> None:
    fake.control.post("/_control/batches", json={"expire_after": 2}).raise_for_status()
    with _anthropic(fake) as client:
        expired = _message_batch(client)
        client.messages.batches.retrieve(expired.id)
        assert [r.result.type for r in client.messages.batches.results(expired.id)] == [
            "succeeded",
            "succeeded",
            "expired",
        ]
        fake.control.post("/_control/batches", json={"expire_after": None, "delay_polls": 5}).raise_for_status()
        running = _message_batch(client)
        assert client.messages.batches.cancel(running.id).processing_status == "canceling"
        assert client.messages.batches.retrieve(running.id).request_counts.canceled == 3
        assert {r.result.type for r in client.messages.batches.results(running.id)} == {"canceled"}


def test_anthropic_checks_custom_ids_as_anthropic_does(fake: FakeProvider) -> None:
    with _anthropic(fake) as client:
        for bad in ("has:colon", "x" * 65):
            with pytest.raises(anthropic.BadRequestError, match="custom_id"):
                client.messages.batches.create(requests=[{"custom_id": bad, "params": _message_params()}])  # type: ignore[list-item]
        with pytest.raises(anthropic.BadRequestError, match="duplicate"):
            client.messages.batches.create(
                requests=[{"custom_id": "a", "params": _message_params()}] * 2  # type: ignore[list-item]
            )
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.retrieve("msgbatch_nope")


def test_batch_knobs_refuse_bad_values_and_reset_clears_everything(fake: FakeProvider) -> None:
    for body in ({"delay_polls": -1}, {"fail_rate": 2}, {"teapot": 1}):
        response = fake.control.post("/_control/batches", json=body)
        assert response.status_code == 422 and response.json()["error"] == "validation_error"
    fake.control.post("/_control/batches", json={"delay_polls": 3, "faults": ["500"]}).raise_for_status()
    with _openai(fake) as client:
        _create(client, _requests(1))
    fake.reset()
    shown = fake.control.get("/_control/batches").json()
    assert shown["batches"] == [] and shown["pending_faults"] == [] and shown["knobs"]["delay_polls"] == 0
