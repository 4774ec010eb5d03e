"""Structured-output dialects against each engine's own request model, and the OpenAI backend's wire choices.

Each engine's request model is re-declared here from its source (the engines themselves need a GPU or a build to
run; llama-cpp-python's server is driven for real in ``test_engine_llamacpp``):
  llama-cpp-python 3691546f (v0.3.35)  llama_cpp/llama_types.py ChatCompletionRequestResponseFormat
  vLLM d7e52523 / d5dba2d7             vllm/entrypoints/openai/engine/protocol.py ResponseFormat,
                                       chat_completion/protocol.py structured_outputs; sampling_params.py
  SGLang 9b116dff                      python/sglang/srt/entrypoints/openai/protocol.py ResponseFormat
  TGI db931fcf (v3.3.7)                router/src/lib.rs GrammarType: serde(tag = "type", content = "value")
  Ollama fb307609 (v0.33.0-rc2)        openai/openai.go ResponseFormat {type, json_schema {schema}}
  llama.cpp 006639c3                   tools/server/server-common.cpp oaicompat_chat_params_parse
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import pytest
from pcfjudge.backends.dialects import AUTO_CHAIN, Dialects, format_fields, refuses_format, without_max_length
from pcfjudge.backends.hosts import is_openai
from pcfjudge.backends.openai_backend import OpenAIBackend, _headers, build_openai, split_credentials
from pcfjudge.backends.params import decoding_params
from pcfjudge.judging.prompts import listwise_schema_v2
from pcfjudge.settings import Settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tests.support.inprocess import listwise_call

SCHEMA = listwise_schema_v2("AB")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LlamaCppPythonFormat(Strict):  # TypedDict {type: Literal["text", "json_object"], schema: NotRequired[Json]}
    type: Literal["text", "json_object"]
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class VllmJsonSchema(BaseModel):  # OpenAIBaseModel: extra="allow"
    name: str
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class VllmFormat(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: VllmJsonSchema | None = None


class VllmStructuredOutputs(Strict):  # StructuredOutputsParams (only the field we send)
    json_: dict[str, Any] | str | None = Field(default=None, alias="json")


class TgiJson(Strict):  # GrammarType::Json, renamed "json", alias "json_object", content "value"
    type: Literal["json", "json_object"]
    value: dict[str, Any]


class OllamaSchema(BaseModel):
    schema_: dict[str, Any] = Field(alias="schema")


class OllamaFormat(BaseModel):  # Go struct: unknown fields ignored
    type: str
    json_schema: OllamaSchema | None = None


def test_json_schema_is_what_vllm_sglang_ollama_and_llama_server_read() -> None:
    fmt = format_fields("json_schema", "listwise_judgment", SCHEMA)["response_format"]
    vllm = VllmFormat.model_validate(fmt)
    assert vllm.type == "json_schema" and vllm.json_schema is not None and vllm.json_schema.json_schema == SCHEMA
    ollama = OllamaFormat.model_validate(fmt)
    assert ollama.json_schema is not None and ollama.json_schema.schema_ == SCHEMA
    assert fmt["json_schema"]["schema"] == SCHEMA  # llama-server: response_format.json_schema.schema
    with pytest.raises(ValidationError, match="'text' or 'json_object'"):  # llama-cpp-python refuses it
        LlamaCppPythonFormat.model_validate(fmt)
    with pytest.raises(ValidationError):  # TGI: no "value" (serde: missing field `value`)
        TgiJson.model_validate(fmt)


def test_json_object_with_schema_is_llama_cpp_pythons_dialect() -> None:
    fmt = format_fields("json_object_schema", "x", SCHEMA)["response_format"]
    assert LlamaCppPythonFormat.model_validate(fmt).schema_ == SCHEMA
    assert fmt == {"type": "json_object", "schema": SCHEMA}  # llama-server reads this form too
    with pytest.raises(ValidationError):
        TgiJson.model_validate(fmt)


def test_tgi_vllm_and_ollama_extras() -> None:
    assert TgiJson.model_validate(format_fields("tgi_json", "x", SCHEMA)["response_format"]).value == SCHEMA
    assert VllmStructuredOutputs.model_validate(format_fields("structured_outputs", "x", SCHEMA)["structured_outputs"])
    assert format_fields("guided_json", "x", SCHEMA) == {"guided_json": SCHEMA}
    assert format_fields("ollama_format", "x", SCHEMA) == {"format": SCHEMA}
    assert format_fields("json_object", "x", SCHEMA) == {"response_format": {"type": "json_object"}}
    assert format_fields("prompt", "x", SCHEMA) == {}


def test_openai_itself_gets_no_max_length_which_its_strict_mode_refuses() -> None:
    sent = format_fields("json_schema", "x", SCHEMA, openai=True)["response_format"]["json_schema"]["schema"]
    assert "maxLength" not in str(sent) and "maxLength" in str(SCHEMA)
    assert without_max_length(SCHEMA)["properties"]["candidates"] == sent["properties"]["candidates"]


@pytest.mark.parametrize(
    ("status", "message", "refused"),
    [
        (
            500,
            "1 validation error: {'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or "
            "'json_object'\"}",
            True,
        ),  # llama-cpp-python 0.3
        (400, 'response_format type must be one of "text" or "json_object", but got: json_schema', True),
        (
            422,
            "Failed to deserialize the JSON body into the target type: response_format: missing field `value`",
            True,
        ),  # TGI (axum)
        (400, "Input should be 'text', 'json_object' or 'json_schema'", True),  # vLLM, SGLang
        (400, "This model's maximum context length is 4096 tokens", False),
        (500, "CUDA out of memory", False),
        (404, "model not found: json_schema", False),
    ],
)
def test_refusals_of_the_format_are_told_from_other_errors(status: int, message: str, refused: bool) -> None:
    assert refuses_format(status, message) is refused


def test_auto_moves_along_the_chain_once_and_keeps_what_the_engine_accepted() -> None:
    dialects = Dialects("auto")
    assert dialects.current == "json_schema" == AUTO_CHAIN[0]
    assert dialects.refused("json_schema") and dialects.current == "json_object_schema"
    assert dialects.refused("json_schema")  # a concurrent call refused the old one: retry with the current
    assert dialects.current == "json_object_schema"
    dialects.accepted("json_object_schema")
    assert not dialects.refused("json_object_schema")  # learned: a later refusal is about something else
    assert dialects.current == "json_object_schema"
    pinned = Dialects("tgi_json")
    assert pinned.current == "tgi_json" and not pinned.refused("tgi_json")
    last = Dialects("auto")
    for _ in AUTO_CHAIN[1:]:
        assert last.refused(last.current)
    assert last.current == "prompt" and not last.refused("prompt")  # bounded: the chain ends


def backend(base_url: str | None, **settings: Any) -> OpenAIBackend:
    built = build_openai(
        Settings(
            openai_api_key="sk-test-key-123456" if base_url is None else None, openai_base_url=base_url, **settings
        )
    )
    assert built is not None
    return built


def test_other_engines_get_max_tokens_and_openai_gets_max_completion_tokens() -> None:
    call = listwise_call()
    local = backend("http://127.0.0.1:9/v1").request(call)
    assert local["max_tokens"] == call.params.max_output_tokens and "max_completion_tokens" not in local
    cloud = backend(None).request(call)
    assert cloud["max_completion_tokens"] == call.params.max_output_tokens and "max_tokens" not in cloud
    assert is_openai("https://my.openai.azure.com/openai") and not is_openai("http://localhost:11434/v1")


def test_reasoning_effort_is_validated_and_keeps_temperature_off_openai() -> None:
    with pytest.raises(ValidationError, match="reasoning_effort"):
        Settings(reasoning_effort="extreme")
    local = decoding_params(
        Settings(reasoning_effort="low", openai_base_url="http://127.0.0.1:11434/v1").providers, "openai"
    )
    assert local.temperature == 0.0 and local.reasoning_effort == "low"  # Ollama would sample at 1.0 without it
    cloud = decoding_params(Settings(reasoning_effort="low").providers, "openai")
    assert cloud.temperature is None  # OpenAI's reasoning models refuse temperature


def test_a_local_engine_needs_no_key_and_base_url_credentials_go_as_basic_auth() -> None:
    url, basic = split_credentials("http://judge:s%40cret@127.0.0.1:8080/v1")
    assert url == "http://127.0.0.1:8080/v1"
    assert basic == "Basic " + base64.b64encode(b"judge:s@cret").decode()
    engine = backend("http://judge:s%40cret@127.0.0.1:8080/v1")
    assert engine.wire.endpoint == "http://127.0.0.1:8080/v1/chat/completions"  # aiohttp refuses URL + header auth
    assert _headers(engine.client)["Authorization"] == basic
    assert "s@cret" not in engine.base_url and "cret" not in engine.base_url
    assert Settings(openai_base_url="http://127.0.0.1:8080/v1").resolved_default_model().startswith("openai:")
    with pytest.raises(ValidationError, match="user:password"):
        Settings(openai_base_url="http://u:p@127.0.0.1:8080/v1", openai_api_key="sk-other-key-123456")
