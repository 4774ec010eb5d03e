"""PCFJ_MODELS_FILE: a LiteLLM proxy's model_list carries over (issue 39): entries with one model_name are one fleet
``fleet:<model_name>``, each an endpoint on the wire its model prefix names, with its key (``os.environ/NAME``), rpm,
tpm and max_parallel_requests; mistakes are refused at startup naming the entry, and keys are never shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from pcfjudge.backends.fleet import FleetBackend, reset_seconds
from pcfjudge.backends.models_file import ModelsFileError, load_models_file, parse_models
from pcfjudge.backends.registry import ModelError, Registry
from pcfjudge.settings import Settings

LITELLM_CONFIG = """
model_list:
  - model_name: qwen-judge
    litellm_params:
      model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct
      api_base: http://vllm-0:8000/v1
      rpm: 600
      max_parallel_requests: 32
    model_info:
      id: vllm-0
  - model_name: qwen-judge
    litellm_params:
      model: openai/Qwen/Qwen2.5-7B-Instruct
      api_base: http://vllm-1:8000/v1
  - model_name: claude-judge
    litellm_params:
      model: anthropic/claude-sonnet-4-6
      api_key: os.environ/ANTHROPIC_KEY_A
      tpm: 400000
litellm_settings:
  num_retries: 3
router_settings:
  routing_strategy: least-busy
"""


def test_a_litellm_config_reads_as_fleets() -> None:
    fleets = parse_models(LITELLM_CONFIG, yaml=True, environ={"ANTHROPIC_KEY_A": "sk-ant-secret-123456789"})
    assert list(fleets) == ["qwen-judge", "claude-judge"]
    first, second = fleets["qwen-judge"].endpoints
    assert (first.id, first.wire, first.model, first.api_base) == (
        "vllm-0",
        "openai",
        "Qwen/Qwen2.5-7B-Instruct",
        "http://vllm-0:8000/v1",
    )
    assert (first.rpm, first.tpm, first.max_parallel_requests, first.api_key) == (600, None, 32, None)
    assert second.id == "qwen-judge-1" and second.wire == "openai" and not second.limited
    (claude,) = fleets["claude-judge"].endpoints
    assert (claude.wire, claude.model, claude.tpm) == ("anthropic", "claude-sonnet-4-6", 400000)
    assert claude.api_key == "sk-ant-secret-123456789"
    assert "sk-ant-secret" not in repr(claude)  # a key is never shown


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("{model_name: m, litellm_params: {model: bedrock/x}}", "bedrock"),
        (
            "{model_name: m, litellm_params: {model: openai/x, api_key: os.environ/NOT_SET_ANYWHERE}}",
            "NOT_SET_ANYWHERE",
        ),
        ("{model_name: m, litellm_params: {model: openai/x, rpm: 0}}", "rpm"),
        ("{model_name: m, litellm_params: {model: openai/x, api_base: 'ftp://x'}}", "api_base"),
        ("{model_name: m, litellm_params: {model: openai/x, api_base: 'http://169.254.169.254/v1'}}", "link-local"),
        ("{model_name: m, litellm_params: {model: openai/x, api_base: 'http://[fe80::1]:8000/v1'}}", "link-local"),
        (
            "{model_name: m, litellm_params: {model: openai/x, api_base: 'http://[::ffff:169.254.1.1]/v1'}}",
            "link-local",
        ),
        ("{model_name: m}", "litellm_params"),
    ],
)
def test_a_mistake_is_refused_naming_the_entry_and_the_fix(entry: str, says: str) -> None:
    with pytest.raises(ModelsFileError, match=r"model_list\[0\]") as caught:
        parse_models(f"model_list: [{entry}]", yaml=True, environ={})
    assert says in str(caught.value)


def test_json_works_as_well(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/x", "api_key": "k"}}]}')
    (endpoint,) = load_models_file(path)["m"].endpoints
    assert (endpoint.model, endpoint.api_key) == ("x", "k")


async def test_the_registry_serves_fleet_model_strings(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(LITELLM_CONFIG.replace("os.environ/ANTHROPIC_KEY_A", "sk-ant-inline-123456789"))
    registry = Registry(Settings(models_file=path, openai_api_key=None, anthropic_api_key=None))
    try:
        model = registry.resolve("fleet:qwen-judge")
        assert model.string == "fleet:qwen-judge" and isinstance(model.backend, FleetBackend)
        assert model.limit.size == 32 + Settings().fanout.backend_concurrency  # the endpoints' capacities together
        assert registry.fleet_models() == ["fleet:qwen-judge", "fleet:claude-judge"]
        with pytest.raises(ModelError, match="fleet:qwen-judge"):
            registry.resolve("fleet:nope")
        assert registry.resolve("qwen-judge") == model  # the bare model_name, as LiteLLM's clients send it
        with pytest.raises(ModelError, match=r"unknown model 'nope'.*fleet:qwen-judge \(or qwen-judge\)"):
            registry.resolve("nope")
        with pytest.raises(ModelError, match="must not be empty"):
            registry.resolve("")
        status = registry.fleet_status()
        assert status["qwen-judge"]["unhealthy"] == []
        assert "sk-ant" not in str(status)
        assert "fleet:*" in Settings(models_file=path).model_allowlist()
    finally:
        await registry.aclose()


def test_openai_reset_headers_read_as_seconds() -> None:
    assert reset_seconds("6m0s") == 360
    assert reset_seconds("250ms") == 0.25
    assert reset_seconds("1h2m3.5s") == 3723.5
    assert reset_seconds("2") == 2
    assert reset_seconds(None) == reset_seconds("soon") == 1.0


def test_a_bare_name_that_is_a_fleet_and_a_jury_is_refused_at_start_up(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(LITELLM_CONFIG.replace("os.environ/ANTHROPIC_KEY_A", "sk-ant-inline-123456789"))
    settings = Settings(models_file=path, juries={"qwen-judge": ["sim:default", "sim:oracle"]})
    with pytest.raises(ModelsFileError, match="'qwen-judge' is also a jury of PCFJ_JURIES"):
        Registry(settings)
