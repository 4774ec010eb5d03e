"""GET /v1/models and the calibration gauges: a service started on a calibration file (written by ``pcfjudge
calibrate`` on the simulated judge, then again after its position bias was raised) shows the records and their drift,
reloads them, and needs a key when keys are configured."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.basics import gauge
from tests.support.inprocess import app_client, app_with_services

KEY = "models-route-key-0123456789"


@pytest.fixture
def drifted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A calibration file: sim:default and sim:oracle measured, then sim:default again with a strong position bias."""
    path = tmp_path / "calibration.json"
    monkeypatch.setenv("PCFJ_CALIBRATION_FILE", str(path))
    assert main(["calibrate", "sim:default", "sim:oracle", "--items", "24"]) == 0
    monkeypatch.setenv("PCFJ_SIM_POSITION_BIAS", "60")
    assert main(["calibrate", "sim:default", "--items", "24"]) == 0
    monkeypatch.delenv("PCFJ_SIM_POSITION_BIAS")
    monkeypatch.delenv("PCFJ_CALIBRATION_FILE")
    return path


@pytest.fixture
def stored(drifted: Path) -> dict[str, dict[str, Any]]:
    """The latest records in the file, by model."""
    return {r["model"]: r for r in json.loads(drifted.read_text(encoding="utf-8"))["latest"]}


async def test_models_show_their_calibration_and_drift(drifted: Path, stored: dict[str, dict[str, Any]]) -> None:
    async with app_client(Settings(calibration_file=drifted)) as client:
        answer = await client.get("/v1/models")
        metrics = (await client.get("/metrics")).text
    assert answer.status_code == 200
    body = answer.json()
    models = {m["id"]: m for m in body["data"]}
    assert body["object"] == "list" and next(iter(models)) == "sim:default"  # the default model first
    default, oracle = models["sim:default"], models["sim:oracle"]
    assert default["default"] and default["allowed"] and default["owned_by"] == "sim" and not oracle["default"]
    assert default["prompt_version"] == "listwise-v2" and default["other_prompt_versions"] == []
    assert default["drift"] == "drift" and oracle["drift"] == "baseline"
    cal = default["calibration"]
    record = stored["sim:default"]
    assert cal["accuracy"] == record["accuracy"] and cal["items"] == 24 and cal["k"] == 5
    assert cal["slice"] == record["slice"] and cal["runs"] == record["runs"]
    assert cal["measured_at"].endswith("Z") and cal["baseline_at"] is not None
    shifts = {s["measure"]: s for s in cal["shifts"]}
    assert shifts["first_position_win_rate"]["drift"] and shifts["first_position_win_rate"]["points"] > 5
    assert oracle["calibration"]["shifts"] == [] and oracle["calibration"]["baseline_at"] is None
    # The configured real providers' defaults are listed (not calibrated, and not configured here).
    assert models["openai:gpt-5.4"]["calibration"] is None and models["openai:gpt-5.4"]["drift"] == "uncalibrated"

    labels = {"model": "sim:default", "prompt_version": "listwise-v2"}
    assert gauge(metrics, "pcfjudge_judge_accuracy", **labels) == pytest.approx(record["accuracy"])
    assert gauge(metrics, "pcfjudge_judge_order_consistency", **labels) == pytest.approx(record["order_consistency"])
    first = gauge(metrics, "pcfjudge_judge_first_position_win_rate", **labels)
    assert first == pytest.approx(record["first_position_win_rate"])
    assert gauge(metrics, "pcfjudge_judge_drift", **labels, measure="first_position_win_rate") == 1
    assert gauge(metrics, "pcfjudge_judge_drift", **labels, measure="accuracy") == 0
    p_value = gauge(metrics, "pcfjudge_judge_drift_p_value", **labels, measure="first_position_win_rate")
    assert p_value is not None and p_value < 0.01
    oracle_labels = {"model": "sim:oracle", "prompt_version": "listwise-v2"}
    assert gauge(metrics, "pcfjudge_judge_drift", **oracle_labels, measure="first_position_win_rate") == 0
    assert gauge(metrics, "pcfjudge_judge_drift_p_value", **oracle_labels) is None  # a baseline has no test


async def test_records_are_reloaded_and_a_model_not_allowed_is_shown_as_such(
    stored: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "later.json"
    text = json.dumps({"format": 1, "latest": list(stored.values()), "baselines": []})
    settings = Settings(calibration_file=path, allowed_models=["sim:default"])
    async with app_with_services(settings) as (client, services):
        assert (await client.get("/v1/models")).json()["data"][0]["calibration"] is None  # no file yet
        assert services.calibration is not None
        await asyncio.to_thread(path.write_text, text)  # what the next refresh finds (PCFJ_CALIBRATION_REFRESH_S)
        assert await services.calibration.refresh()
        models = {m["id"]: m for m in (await client.get("/v1/models")).json()["data"]}
        assert services.reliability.get("sim:default", "listwise-v2") is not None  # juries weigh with it too
        await asyncio.to_thread(path.write_text, "{broken")
        assert not await services.calibration.refresh()  # a broken store keeps what was loaded
        assert services.reliability.get("sim:default", "listwise-v2") is not None
    assert list(models) == ["sim:default", "sim:oracle"]
    assert models["sim:default"]["allowed"] and models["sim:default"]["drift"] == "drift"
    assert not models["sim:oracle"]["allowed"] and models["sim:oracle"]["calibration"] is not None


async def test_the_route_needs_a_key_when_keys_are_configured(drifted: Path) -> None:
    settings = Settings(calibration_file=drifted, api_keys=SecretStr(f"ops:{KEY}"))
    async with app_client(settings) as client:
        refused = await client.get("/v1/models")
        assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
        allowed = await client.get("/v1/models", headers={"Authorization": f"Bearer {KEY}"})
        assert allowed.status_code == 200 and allowed.json()["data"][0]["drift"] == "drift"


async def test_a_jury_is_listed_as_a_model_every_door_takes() -> None:
    """A PCFJ_JURIES name is a model a request may name at every door: listed, owned by "jury", allowed when every
    juror is."""
    settings = Settings(juries={"panel": ["sim:default", "sim:oracle"], "outside": ["sim:default", "openai:x"]})
    async with app_client(settings) as client:
        listed = {m["id"]: m for m in (await client.get("/v1/models")).json()["data"]}
    assert listed["panel"]["owned_by"] == "jury" and listed["panel"]["allowed"] is True
    assert listed["outside"]["allowed"] is False  # openai:x is off the default allowlist
