"""`pcfjudge bench soak`, short form (60 s): 3 replicas sharing a private Redis under load, while one replica is
killed and restarted, Redis is killed and restarted empty, the provider answers 429 to everything for 5 s and
another replica is rolled with SIGTERM: no request is lost. (The full 5-minute run's figures are in the README.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.basics import ROOT
from tests.support.processes import clean_env
from tests.support.redis_server import require_redis

pytestmark = pytest.mark.slow


def test_short_soak_loses_no_request(tmp_path: Path) -> None:
    require_redis()
    out = tmp_path / "soak.json"
    argv = [sys.executable, "-m", "pcfjudge.cli.main", "bench", "soak", "--seconds", "60", "--items", "3000"]
    argv += ["--json", str(out), "--workdir", str(tmp_path / "logs")]
    done = subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    summary, events = report["summary"], [e["what"] for e in report["events"]]

    assert summary["lost"] == 0 and summary["requests"] > 100
    assert summary["ok"] + summary["degraded"] == summary["requests"]
    # every fault really happened, in order, and the gracefully stopped replica exited 0
    kinds = ["killed (SIGKILL)", "restarted; serving again", "redis-server killed", "redis-server restarted",
             "every call 429", "429 burst over", "stopped by SIGTERM", "restarted", "load over"]  # fmt: skip
    assert len(events) == len(kinds) and all(k in e for k, e in zip(kinds, events, strict=True))
    assert "exit code 0" in events[6]
    burst, over = report["events"][4], report["events"][5]
    assert over["provider_calls"] > burst["provider_calls"], "no backend call was made during the 429 burst"
    assert over["provider_answers"] - burst["provider_answers"] < over["provider_calls"] - burst["provider_calls"]
    assert summary["provider_faults"].get("429", 0) > 0
    # clients felt the faults and their retries completed the requests: some attempts failed, none was lost
    assert sum(n for outcome, n in summary["attempts"].items() if outcome != "200") > 0
    assert summary["retried"] > 0
    # every replica answered, the restarted ones included
    assert set(summary["served_by_replica"]) == {"replica-0", "replica-1", "replica-2"}
    # sharing across replicas: until the first fault, each judged item cost about K backend answers, not K per
    # replica that judged it (cross-replica single flight through Redis)
    first = report["events"][0]
    k = report["config"]["k"]
    assert first["items_judged"] > 0
    assert 0.9 * k <= first["provider_answers"] / first["items_judged"] < 1.5 * k
    assert summary["completions_per_item"] >= k
