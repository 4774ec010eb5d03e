"""``--via vllm``: the input file is what ``vllm run-batch`` takes (checked against vLLM's own request model,
re-declared below because vllm cannot be installed here) and its output file is collected like a provider's."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from pcfjudge.batch.job import BatchError, BatchJob
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.services import Services
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from tests.support.basics import OPENAI_KEY
from tests.support.inprocess import FakeProvider, provider_settings

# ── vLLM's batch-runner models ───────────────────────────────────────────────────────────────────────────────────
# Re-declared from vllm-project/vllm at commit 0056ae7b2144abbc7b4916a43491c154567e0b76,
# vllm/entrypoints/openai/run_batch.py (BatchRequestInput, BatchResponseData, BatchRequestOutput, and
# make_error_request_output for the shape of a failed line), with the request body's model, ChatCompletionRequest,
# as of vllm/entrypoints/openai/chat_completion/protocol.py at commit 002032ee2b18e1f7bd924ec47b62504ba3866063
# (the fields a judge request can carry, with vLLM's types; ResponseFormat / JsonSchemaResponseFormat as in
# vllm/entrypoints/openai/protocol.py at 0052bed36509c7a5a2d8e48265334e40cf2f5a0e). vLLM's OpenAIBaseModel allows
# extra fields but logs them as "present in the request but ignored": ``ignored`` collects them here.


class OpenAIBaseModel(BaseModel):
    model_config = ConfigDict(extra="allow")

    def ignored(self) -> set[str]:
        found = set(self.model_extra or {})
        for value in self.__dict__.values():
            if isinstance(value, OpenAIBaseModel):
                found |= {f"nested.{name}" for name in value.ignored()}
        return found


class JsonSchemaResponseFormat(OpenAIBaseModel):
    name: str
    description: str | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(OpenAIBaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaResponseFormat | None = None


@dataclass
class StructuredOutputsParams:  # vllm.sampling_params.StructuredOutputsParams (a dataclass)
    json: str | dict[str, Any] | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None


class ChatMessage(OpenAIBaseModel):  # vllm.entrypoints.chat_utils.ChatCompletionMessageParam (text messages)
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]]


class ChatCompletionRequest(OpenAIBaseModel):
    messages: list[ChatMessage]
    model: str | None = None
    max_tokens: int | None = None  # deprecated in favour of max_completion_tokens (vLLM still reads it)
    max_completion_tokens: int | None = None
    n: int | None = 1
    response_format: ResponseFormat | None = None
    seed: int | None = Field(None, ge=-(2**63), le=2**63 - 1)
    stream: bool | None = False
    temperature: float | None = None
    top_p: float | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    structured_outputs: StructuredOutputsParams | None = None


class BatchRequestInput(OpenAIBaseModel):
    custom_id: str
    method: str
    url: str
    body: ChatCompletionRequest | dict[str, Any]

    @field_validator("body", mode="plain")
    @classmethod
    def check_type_for_url(cls, value: Any, info: ValidationInfo) -> Any:
        if info.data["url"] == "/v1/chat/completions":
            return ChatCompletionRequest.model_validate(value)
        raise ValueError(f"unsupported url {info.data['url']}")


class BatchResponseData(OpenAIBaseModel):
    status_code: int = 200
    request_id: str
    body: dict[str, Any] | None = None


class BatchRequestOutput(OpenAIBaseModel):
    id: str
    custom_id: str
    response: BatchResponseData | None
    error: Any | None


# ── tests ────────────────────────────────────────────────────────────────────────────────────────────────────────

MODEL = "openai:Qwen/Qwen3-8B"


def tasks() -> list[ListwiseTask]:
    return [
        ListwiseTask(
            f"Question {i}: who wrote Hamlet?", ["a", "b", "c"], ["Shakespeare.", "Marlowe.", "Bacon."], 3, model=MODEL
        )
        for i in range(2)
    ]


def drive(items: list[ListwiseTask]) -> Callable[[Judge], Awaitable[None]]:
    async def run(judge: Judge) -> None:
        for task in items:
            with contextlib.suppress(JudgingFailed):
                await judge.listwise(task)

    return run


@pytest.fixture(params=["json_schema", "structured_outputs"])
async def services(request: pytest.FixtureRequest, fake: FakeProvider) -> AsyncIterator[Services]:
    settings = provider_settings("openai", fake, default_model=MODEL, openai_output_mode=request.param)
    built = Services.build(settings)
    yield built
    await built.aclose()


async def write_input(services: Services, directory: Path) -> tuple[BatchJob, list[dict[str, Any]]]:
    job = BatchJob(services, directory, MODEL, via="vllm")
    (sub,) = await job.submit(job.to_submit(await job.plan(drive(tasks()))), job.gate(yes=False))  # no money: no ask
    lines = [json.loads(raw) for raw in (directory / sub.input).read_text().splitlines()]
    return job, lines


async def test_the_input_file_is_what_vllm_run_batch_takes(
    services: Services, fake: FakeProvider, tmp_path: Path
) -> None:
    job, lines = await write_input(services, tmp_path / "batch")
    try:
        assert len(lines) == 6 and fake.calls()["calls"] == {}  # written, nothing sent
        for line in lines:
            parsed = BatchRequestInput.model_validate(line)
            assert parsed.ignored() == set(), f"vLLM would ignore {parsed.ignored()}"
            body = parsed.body
            assert isinstance(body, ChatCompletionRequest) and body.model == "Qwen/Qwen3-8B"
            assert [m.role for m in body.messages] == ["system", "user"]
            mode = services.settings.providers.openai_output_mode
            if mode == "json_schema":
                assert body.response_format is not None and body.response_format.json_schema is not None
                assert body.response_format.json_schema.json_schema is not None  # the schema vLLM decodes with
            else:
                assert body.structured_outputs is not None and isinstance(body.structured_outputs.json, dict)
        (sub,) = job.state.submissions
        assert sub.status == "submitted" and sub.output == "output-0001.jsonl"
        with pytest.raises(BatchError, match="vllm run-batch"):  # nothing to wait for in process
            await job.rounds(drive(tasks()), job.gate(yes=False))
    finally:
        job.close()


def vllm_output(lines: list[dict[str, Any]], fake: FakeProvider, failed: str) -> str:
    """What ``vllm run-batch`` writes for ``lines`` (answers from the fake's live endpoint): one
    ``BatchRequestOutput`` per line, as ``model_dump_json`` writes it; ``failed`` gets vLLM's error line."""
    out = []
    with httpx.Client(base_url=fake.url, headers={"Authorization": f"Bearer {OPENAI_KEY}"}) as client:
        for line in lines:
            request_id = f"vllm-batch-{uuid.uuid4().hex}"
            if line["custom_id"] == failed:
                response = BatchResponseData(status_code=400, request_id=request_id)
                output = BatchRequestOutput(
                    id=f"vllm-{uuid.uuid4().hex}", custom_id=failed, response=response, error="Prompt too long"
                )
            else:
                body = client.post("/v1/chat/completions", json=line["body"]).json()
                body |= {"prompt_logprobs": None, "prompt_token_ids": None, "kv_transfer_params": None}
                body["choices"][0] |= {"stop_reason": None, "token_ids": None}
                body["choices"][0]["message"] |= {"reasoning": None, "tool_calls": []}
                output = BatchRequestOutput(
                    id=f"vllm-{uuid.uuid4().hex}",
                    custom_id=line["custom_id"],
                    response=BatchResponseData(request_id=request_id, body=body),
                    error=None,
                )
            out.append(output.model_dump_json() + "\n")
    return "".join(out)


async def test_vllm_run_batch_output_is_collected_and_a_failed_line_resubmitted_alone(
    services: Services, fake: FakeProvider, tmp_path: Path
) -> None:
    job, lines = await write_input(services, tmp_path / "batch")
    try:
        (sub,) = job.state.submissions
        failed = lines[3]["custom_id"]
        text = vllm_output(lines, fake, failed)
        (tmp_path / "batch" / "output-0001.jsonl").write_text(text[: len(text) // 2])  # vLLM still writing
        await job.refresh()
        assert sub.status == "submitted" and sub.provider_status is not None and "of 6 results" in sub.provider_status
        (tmp_path / "batch" / "output-0001.jsonl").write_text(text)
        await job.refresh()
        assert sub.status == "ended"
        recorded = await job.collect(await job.plan(drive(tasks())))
        assert dict(recorded) == {"ok": 5, "provider_error": 1}
        assert "Prompt too long" in job.results.errors[sub.requests[failed]]
        missing = await job.plan(drive(tasks()))
        assert list(missing) == [sub.requests[failed]]
        (again,) = await job.submit(job.to_submit(missing), job.gate(yes=False))
        assert list(again.requests) == [failed]
    finally:
        job.close()
