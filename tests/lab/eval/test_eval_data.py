"""Benchmark data by name: the bundled copies (with their sources, licences and citations), the hub loaders on local
copies (no network), the errors that say what ``--data`` takes, and ``pcfjudge eval`` from a fresh install."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.eval.data import BUNDLED, DATA_DIR, HubData, bundled, resolve
from pcfjudge_lab.eval.judgebench.loader import load_judgebench

from tests.support.basics import ROOT

PCFJUDGE = Path(sys.executable).with_name("pcfjudge")
NOTES = ("README.md", "LICENSE", "CITATION.bib")  # beside every bundled file


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def offline_env(home: Path) -> dict[str, str]:
    """The environment of a subprocess that must not reach the hub: offline, with its caches in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PCFJ_", "OPENAI_", "ANTHROPIC_", "HF_"))}
    return env | {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


# ── the bundled copies ───────────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_each_bundled_file_is_whole_and_has_its_source_licence_and_citation_beside_it(name: str) -> None:
    data = BUNDLED[name]
    path = bundled(name)
    assert path.is_relative_to(DATA_DIR) and DATA_DIR.is_relative_to(ROOT / "lab" / "pcfjudge_lab")
    assert len(records(path)) == data.records
    notes = path.parent
    readme = (notes / "README.md").read_text(encoding="utf-8")
    assert hashlib.sha256(path.read_bytes()).hexdigest() in readme  # the copy is the one its note describes
    assert "**Source.**" in readme and "**Licence.**" in readme and "**Citation.**" in readme
    assert (notes / "LICENSE").read_text(encoding="utf-8").strip()
    assert "arxiv.org/abs/" in (notes / "CITATION.bib").read_text(encoding="utf-8")
    assert name in (DATA_DIR / "README.md").read_text(encoding="utf-8")


def test_the_bundled_judgebench_splits_are_the_published_ones() -> None:
    for name, model, n in (("judgebench:gpt-4o", "gpt-4o", 350), ("judgebench:claude-3-5-sonnet", "claude-3-5", 270)):
        raw = records(bundled(name))
        assert len({r["pair_id"] for r in raw}) == n and all(r["response_model"].startswith(model) for r in raw)
    sample = records(bundled("rewardbench2:sample"))
    assert [r["id"] for r in sample] == ["0", "1", "2", "3", "4", "5"] and {r["subset"] for r in sample} == {
        "Factuality"
    }


def test_names_resolve_to_the_bundled_files_and_files_to_themselves(tmp_path: Path) -> None:
    assert resolve("judgebench", "judgebench:gpt-4o") == bundled("judgebench:gpt-4o")
    assert resolve("rewardbench2", "rewardbench2:sample") == bundled("rewardbench2:sample")
    own = tmp_path / "mine.jsonl"
    own.write_text("", encoding="utf-8")
    assert resolve("judgebench", str(own)) == own
    assert resolve("judgebench", "hub") == HubData("ScalerLab/JudgeBench", "gpt")
    assert resolve("judgebench", "hub:claude", str(tmp_path)) == HubData(str(tmp_path), "claude")
    assert resolve("rewardbench2", "hub") == HubData("allenai/reward-bench-2", "test")


@pytest.mark.parametrize(
    ("benchmark", "spec", "hub_repo", "message"),
    [
        (
            "judgebench",
            "rewardbench2:sample",
            None,
            "is rewardbench2 data; `eval judgebench` takes 'judgebench:gpt-4o'",
        ),
        (
            "rewardbench2",
            "judgebench:gpt-4o",
            None,
            "is judgebench data; `eval rewardbench2` takes 'rewardbench2:sample'",
        ),
        ("judgebench", "judgebench:gpt4", None, "no such bundled data; `eval judgebench` takes"),
        ("judgebench", "hub:gemini", None, "ScalerLab/JudgeBench has no split 'gemini'"),
        (
            "rewardbench2",
            "judgebench-gpt-4o.jsonl",
            None,
            "no such file; `eval rewardbench2` takes 'rewardbench2:sample'",
        ),
        ("judgebench", "judgebench:gpt-4o", "somewhere", "--hub-repo somewhere applies only with --data hub"),
    ],
)
def test_a_wrong_data_name_says_what_is_accepted(benchmark: Any, spec: str, hub_repo: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        resolve(benchmark, spec, hub_repo)


def test_the_command_reports_a_wrong_name_as_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "judgebench", "--data", "judgebench-gpt-4o.jsonl", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "'judgebench:gpt-4o', 'judgebench:claude-3-5-sonnet'" in err
    assert not (tmp_path / "o").exists()


def test_bundled_judgebench_by_name_in_process(tmp_path: Path) -> None:
    out = tmp_path / "jb"
    assert (
        main(["eval", "judgebench", "--data", "judgebench:claude-3-5-sonnet", "--limit", "4", "--out", str(out)]) == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 4 and summary["data"] == "judgebench:claude-3-5-sonnet"
    assert "--data judgebench:claude-3-5-sonnet" in summary["command"]


# ── the hub loaders, on local copies laid out as the hub repositories are ───────────────────────────────────────────


def judgebench_copy(root: Path) -> Path:
    """ScalerLab/JudgeBench as a directory: one JSON-lines shard per split (split names from the file names)."""
    (root / "data").mkdir(parents=True)
    for split, name, n in (("gpt", "judgebench:gpt-4o", 5), ("claude", "judgebench:claude-3-5-sonnet", 3)):
        lines = bundled(name).read_text(encoding="utf-8").splitlines()[:n]
        (root / "data" / f"{split}-00000-of-00001.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def rewardbench2_copy(root: Path) -> Path:
    """allenai/reward-bench-2 as a directory: its ``data/test-*.parquet`` shard, a Focus record among the Factuality."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = records(bundled("rewardbench2:sample"))
    rows.insert(2, rows[0] | {"id": "9", "subset": "Focus"})
    (root / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "data" / "test-00000-of-00001.parquet")
    return root


def run_cli(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PCFJUDGE), *args], env=offline_env(home), cwd=home, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_judgebench_from_the_hub_loader_on_a_local_copy(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    copy = judgebench_copy(tmp_path / "JudgeBench")
    out = tmp_path / "out"
    done = run_cli(["eval", "judgebench", "--data", "hub:claude", "--hub-repo", str(copy), "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 3 and summary["data"] == "hub:claude"
    expected = [p.pair_id for p in load_judgebench(bundled("judgebench:claude-3-5-sonnet"), limit=3)]
    assert sorted({json.loads(line)["item"] for line in (out / "runs.jsonl").read_text().splitlines()}) == sorted(
        expected
    )
    gpt = tmp_path / "gpt"
    done = run_cli(["eval", "judgebench", "--data", "hub", "--hub-repo", str(copy), "--out", str(gpt)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((gpt / "summary.json").read_text())["n"] == 5  # plain 'hub' is the gpt split


@pytest.mark.slow
def test_rewardbench2_from_the_hub_loader_on_a_local_copy(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    copy = rewardbench2_copy(tmp_path / "reward-bench-2")
    out = tmp_path / "out"
    args = ["eval", "rewardbench2", "--data", "hub", "--hub-repo", str(copy), "--k", "2", "--executions", "1"]
    done = run_cli([*args, "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 6  # the Focus record is not a Factuality item
    items = {json.loads(line)["item"] for line in (out / "runs.jsonl").read_text().splitlines()}
    assert items == {f"Factuality:{i}" for i in range(6)}


@pytest.mark.slow
def test_the_hub_without_network_fails_at_once_saying_how_to_fix_it(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    done = run_cli(["eval", "rewardbench2", "--data", "hub", "--out", str(tmp_path / "o")], tmp_path)
    assert done.returncode == 2
    assert "could not load allenai/reward-bench-2 split 'test'" in done.stderr and "--hub-repo DIR" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_hub_without_the_extra_says_which_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets now raises ImportError
    assert main(["eval", "judgebench", "--data", "hub", "--out", str(tmp_path / "o")]) == 2
    assert "pip install 'pcfjudge-lab[hub]'" in capsys.readouterr().err


# ── from a fresh install: the wheel alone, in a directory with nothing beside it ─────────────────────────────────


@pytest.mark.slow
def test_judgebench_by_name_from_a_fresh_install(tmp_path: Path) -> None:
    """``pip install pcfjudge pcfjudge-lab`` then ``pcfjudge eval judgebench --data judgebench:gpt-4o --model
    sim:oracle``: the service's command delegates to the installed lab, which reads its own copy of the data."""
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels)]
    subprocess.run([*build, str(ROOT), str(ROOT / "lab")], check=True, capture_output=True)
    (service,) = wheels.glob("pcfjudge-*.whl")
    (wheel,) = wheels.glob("pcfjudge_lab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in BUNDLED.values():
        shipped = {
            f"pcfjudge_lab/data/{data.file}",
            *(f"pcfjudge_lab/data/{Path(data.file).parent}/{n}" for n in NOTES),
        }
        assert shipped <= names, shipped - names
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target)]
    subprocess.run([*install, str(service), str(wheel)], check=True, capture_output=True)
    work = tmp_path / "elsewhere"  # no checkout, no data beside it: only what the wheel installed
    work.mkdir()
    env = offline_env(tmp_path / "home") | {"PYTHONPATH": str(target)}
    command = [sys.executable, "-m", "pcfjudge.cli.main", "eval", "judgebench", "--data", "judgebench:gpt-4o"]
    command += ["--model", "sim:oracle", "--limit", "12", "--out", "out"]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert summary["n"] == 12 and summary["model"] == "sim:oracle"
    where = subprocess.run(
        [sys.executable, "-c", "import pcfjudge_lab.eval.data as d; print(d.bundled('judgebench:gpt-4o'))"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(target)  # read from the installed copy, not the checkout
