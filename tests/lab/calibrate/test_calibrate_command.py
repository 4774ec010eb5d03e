"""``pcfjudge calibrate``: the simulated judge through the real command (in process), its records in a file and in a
real Redis, drift after the judge's behaviour changes, the exit codes, and the fake provider as a paid model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.calibrate.pinned import available, pinned_slice

from tests.support.basics import OPENAI_KEY
from tests.support.inprocess import FakeProvider
from tests.support.redis_server import RedisServer

PREFIX = "pcfjudge:calibration"


@pytest.fixture
def store_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "calibration.json"
    monkeypatch.setenv("PCFJ_CALIBRATION_FILE", str(path))
    return path


def stored(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The file's latest records and baselines, by model."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == 1
    return {kind: {r["model"]: r for r in data[kind]} for kind in ("latest", "baselines")}


def by_measure(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["measure"]: s for s in record["drift"]}


def test_the_pinned_slice_is_fixed_and_named_by_its_content() -> None:
    first, again = pinned_slice(10, 5), pinned_slice(10, 5)
    assert first == again and first.name.startswith("pinned-v1/10x5/")
    assert [i.item_id.partition(":")[0] for i in first.items[:4]] == ["rewardbench2", "judgebench"] * 2
    assert (first.rewardbench2, first.judgebench) == (5, 5)
    assert pinned_slice(40, 5).rewardbench2 == 6  # the bundled sample's six, then JudgeBench only
    assert pinned_slice(10, 3).name != first.name  # K is part of the name: other K, other baseline
    assert pinned_slice(11, 5).items[:10] == first.items  # a longer slice extends a shorter one
    assert available() == 6 + 350
    with pytest.raises(ValueError, match="between 2 and 356"):
        pinned_slice(357, 5)


def test_calibrate_writes_plausible_records_to_the_file(store_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "sim:default", "sim:oracle"]) == 0
    out = capsys.readouterr()
    records = stored(store_file)
    assert set(records["latest"]) == set(records["baselines"]) == {"sim:default", "sim:oracle"}
    default, oracle = records["latest"]["sim:default"], records["latest"]["sim:oracle"]
    for r in (default, oracle):
        assert r["items"] == 40 and r["k"] == 5 and r["prompt_version"] == "listwise-v2"
        assert r["slice"] == pinned_slice(40, 5).name and len(r["errors"]) == 40
        assert r["correct"] == 40 - sum(r["errors"]) and r["accuracy"] == round(r["correct"] / 40, 4)
        assert r["runs"] == 6 * 5 + 34 * 2  # K permutations of 4 candidates, both orders of a pair
        assert 0 < r["order_consistency"] <= 1 and 0 < r["first_position_win_rate"] < 1
        assert r["baseline_at"] is None and r["drift"] == [] and r["measured_at"] > 0
    # sim:oracle is told the gold answer; sim:default does not read the answers (about chance: ½ on pairs, ¼ on four)
    assert oracle["accuracy"] >= 0.85 and 0.2 <= default["accuracy"] <= 0.6
    assert records["baselines"]["sim:default"] == default  # the first record of the slice is its baseline
    table = out.out
    assert f"Calibration on {default['slice']}: 40 items (6 RewardBench 2, 34 JudgeBench), K=5" in table
    assert "first-position win rate" in table and "Error correlation" in table
    assert "new baseline: sim:default, sim:oracle" in table
    assert f"stored in {store_file}" in out.err


def test_an_unchanged_judge_is_stable_and_a_changed_one_drifts(
    store_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "sim:default", "--items", "24"]) == 0
    first = stored(store_file)["latest"]["sim:default"]
    assert main(["calibrate", "sim:default", "--items", "24", "--fail-on-drift"]) == 0  # the same judge: stable
    again = stored(store_file)["latest"]["sim:default"]
    assert again["baseline_at"] == first["measured_at"]
    assert {m: (s["drift"], s["p_value"]) for m, s in by_measure(again).items()} == {
        "accuracy": (False, 1.0),
        "first_position_win_rate": (False, 1.0),
    }
    capsys.readouterr()

    monkeypatch.setenv("PCFJ_SIM_POSITION_BIAS", "60")  # the judge now favours whatever it is shown first
    assert main(["calibrate", "sim:default", "--items", "24", "--fail-on-drift"]) == 3
    table = capsys.readouterr().out
    records = stored(store_file)
    drifted = records["latest"]["sim:default"]
    first_position = by_measure(drifted)["first_position_win_rate"]
    assert first_position["drift"] and first_position["p_value"] < 0.01 and first_position["test"] == "two-proportion-z"
    assert first_position["current"] - first_position["baseline"] > 0.05
    assert records["baselines"]["sim:default"] == first  # the baseline stays the first record
    assert "DRIFT (first-position win rate)" in table and "two-proportion z p < 0.0001" in table

    assert main(["calibrate", "sim:default", "--items", "24"]) == 0  # without --fail-on-drift: reported, exit 0
    assert main(["calibrate", "sim:default", "--items", "24", "--rebaseline"]) == 0
    rebased = stored(store_file)
    assert rebased["baselines"]["sim:default"] == rebased["latest"]["sim:default"]
    assert rebased["latest"]["sim:default"]["baseline_at"] is None
    assert main(["calibrate", "sim:default", "--items", "24", "--fail-on-drift"]) == 0  # stable against the new one


def test_calibrate_through_redis(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PCFJ_REDIS_URL", redis_server.url)
    monkeypatch.setenv("PCFJ_CALIBRATION_FILE", str(tmp_path / "unused.json"))
    assert main(["calibrate", "sim:default", "sim:oracle", "--items", "16"]) == 0
    monkeypatch.setenv("PCFJ_SIM_POSITION_BIAS", "60")
    assert main(["calibrate", "sim:default", "sim:oracle", "--items", "16", "--fail-on-drift"]) == 3
    assert "stored in redis://127.0.0.1:" in capsys.readouterr().err
    assert not (tmp_path / "unused.json").exists()
    name = pinned_slice(16, 5).name
    with redis_server.client() as client:
        index = {k.decode() for k in client.smembers(f"{PREFIX}:index")}
        assert index == {f"{PREFIX}:latest:sim:default:listwise-v2", f"{PREFIX}:latest:sim:oracle:listwise-v2"}
        latest = json.loads(client.get(f"{PREFIX}:latest:sim:default:listwise-v2") or b"{}")
        baseline = json.loads(client.get(f"{PREFIX}:baseline:sim:default:listwise-v2:{name}") or b"{}")
    assert latest["slice"] == baseline["slice"] == name
    assert latest["baseline_at"] == baseline["measured_at"] and baseline["baseline_at"] is None
    assert by_measure(latest)["first_position_win_rate"]["drift"] is True


def test_calibrate_a_model_behind_the_fake_provider(
    fake: FakeProvider, store_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PCFJ_OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("PCFJ_OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("PCFJ_RETRY_BASE_S", "0.001")
    # A paid model: without --yes and with no terminal to confirm on, nothing is called.
    assert main(["calibrate", "openai:judge-x", "--items", "6"]) == 2
    assert "pass --yes" in capsys.readouterr().err and not store_file.exists()
    assert main(["calibrate", "openai:judge-x", "--items", "6", "--k", "3", "--yes"]) == 0
    record = stored(store_file)["latest"]["openai:judge-x"]
    assert record["items"] == 6 and record["k"] == 3 and record["runs"] == 3 * 3 + 3 * 2
    assert "openai:judge-x" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sim:nope"], "model 'sim:nope': unknown simulated model 'nope'"),
        (["sim:default", "gpt-5"], "unknown model 'gpt-5'; name a model as provider:model"),
        (["openai:gpt-5.4"], "provider 'openai' is not configured on this server (set OPENAI_API_KEY)"),
        (["sim:default", "--items", "1"], "--items must be between 2 and 356"),
        (["sim:default", "--k", "0"], "--k must be at least 1"),
    ],
)
def test_a_bad_model_or_option_is_a_clear_error(
    argv: list[str], message: str, store_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert not store_file.exists()  # nothing judged, nothing stored


def test_without_models_it_calibrates_the_default_model(store_file: Path) -> None:
    assert main(["calibrate", "--items", "4", "--k", "2"]) == 0
    assert set(stored(store_file)["latest"]) == {"sim:default"}


def test_a_broken_store_is_an_error_not_a_traceback(store_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_file.parent.mkdir(parents=True)
    store_file.write_text("{not json", encoding="utf-8")
    assert main(["calibrate", "sim:default", "--items", "4"]) == 1
    assert "is not JSON" in capsys.readouterr().err
