"""The alert rules do what they say: ``promtool test rules`` runs deploy/prometheus/alerts_test.yml (the drift alert
fires once a replica's ``pcfjudge_judge_drift`` has been 1 for 10 minutes, and not for a stable model; the single
flight alert once over 5% of backend calls went without it for 10 minutes, and not for a blip), and the same tests
fail against a rule that never fires."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.basics import ROOT

PROMETHEUS = ROOT / "deploy" / "prometheus"
pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool missing (scripts/test.sh installs it)"
)


def promtool_test(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", "test", "rules", "alerts_test.yml"], cwd=directory, capture_output=True, text=True, timeout=60
    )


def test_the_alert_rules_pass_their_unit_tests() -> None:
    done = promtool_test(PROMETHEUS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize(
    ("alert", "firing", "silent"),
    [
        ("PcfjudgeJudgeDrift", "(pcfjudge_judge_drift) == 1", "(pcfjudge_judge_drift) == 2"),
        ("PcfjudgeSingleFlightLost", "total[10m])), 1e-9) > 0.05", "total[10m])), 1e-9) > 5"),
    ],
)
def test_the_unit_tests_catch_a_rule_that_never_fires(tmp_path: Path, alert: str, firing: str, silent: str) -> None:
    rules = (PROMETHEUS / "alerts.yml").read_text(encoding="utf-8")
    assert rules.count(firing) == 1
    (tmp_path / "alerts.yml").write_text(rules.replace(firing, silent), encoding="utf-8")
    shutil.copy(PROMETHEUS / "alerts_test.yml", tmp_path / "alerts_test.yml")
    done = promtool_test(tmp_path)
    assert done.returncode != 0, done.stdout
    assert alert in done.stdout + done.stderr
