"""The official openai SDK, unchanged but for its base URL, against a real ``pcfjudge serve``: MT-Bench's and
Arena-Hard-Auto's real prompts (tests/doors/chat/framework_prompts.py), answered, streamed and refused as the OpenAI
wire does it, the verdict the framework's own parser reads the same in either order."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.doors.chat import framework_prompts as fp

QUESTION = "Name a primary colour."
CLOSE = ("Blue is one.", "Red.")  # the simulated judge (seed 0) prefers whichever it is shown first


@pytest.fixture(scope="module")
def sdk(serve_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{serve_url}/v1", api_key="unused", max_retries=0) as client:
        yield client


def test_mt_bench_through_the_sdk_is_a_tie_in_either_order(sdk: openai.OpenAI) -> None:
    verdicts = []
    for a, b in (CLOSE, CLOSE[::-1]):
        raw = sdk.chat.completions.with_raw_response.create(
            model="sim:default",
            messages=fp.mt_bench(QUESTION, a, b),
            temperature=0,
            max_tokens=512,  # type: ignore[arg-type]
        )
        assert raw.headers["x-pcfjudge-template"] == "mt-bench-pair-v2"
        completion = raw.parse()
        assert completion.object == "chat.completion" and completion.choices[0].finish_reason == "stop"
        verdicts.append(fp.fastchat_winner(completion.choices[0].message.content or ""))
        extra = completion.model_extra or {}
        assert extra["pcfjudge"]["split"] is True and completion.usage is not None
        assert completion.usage.total_tokens == sum(
            o["input_tokens"] + o["output_tokens"] for o in extra["pcfjudge"]["orders"]
        )
    assert verdicts == ["tie", "tie"]  # straight, each order's first shown would win


def test_arena_hard_streamed_through_the_sdk(sdk: openai.OpenAI) -> None:
    labels = []
    for a, b in (CLOSE, CLOSE[::-1]):
        stream = sdk.chat.completions.create(
            model="sim:default",
            messages=fp.arena_hard(QUESTION, a, b),  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens >= 0
        labels.append(fp.arena_hard_score(text))
    assert labels == ["A=B", "A=B"]


def test_the_sdk_sees_the_models_and_the_errors(sdk: openai.OpenAI) -> None:
    assert "sim:default" in {m.id for m in sdk.models.list()}  # GET /v1/models: what a request may name
    with pytest.raises(openai.BadRequestError) as refused:  # OpenAI's 400 for an invalid request, never a 422
        sdk.chat.completions.create(model="sim:default", messages=fp.mt_bench(QUESTION, *CLOSE), n=2)  # type: ignore[arg-type]
    assert "n: this endpoint answers one choice" in refused.value.message  # OpenAI's error shape
    assert refused.value.code == "validation_error" and refused.value.param == "n"
    with pytest.raises(openai.BadRequestError) as bad_model:
        sdk.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "hi"}])
    assert "unknown model 'gpt-4'" in bad_model.value.message and "provider:model" in bad_model.value.message


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"messages": [{"role": "judge", "content": "hi"}]}, "messages.0.role"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}, "temperature"),
        ({"messages": [{"role": "user"}]}, "messages.0"),
    ],
)
def test_a_malformed_request_is_the_sdks_bad_request_naming_the_field(
    sdk: openai.OpenAI, fields: dict[str, object], named: str
) -> None:
    """What the openai SDK would send for a caller's mistake: OpenAI's error object, so the exception's message and
    ``param`` name the field (not a bare "Error code: 422")."""
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.chat.completions.create(model="sim:default", **fields)  # type: ignore[call-overload]
    assert refused.value.message.startswith(f"Error code: 400 - {named}"), refused.value.message
    assert refused.value.param == named and refused.value.type == "invalid_request_error"
