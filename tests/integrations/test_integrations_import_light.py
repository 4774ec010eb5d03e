"""The trainer-side integrations import only httpx and the standard library: a training process that uses them loads
no FastAPI, Redis, provider SDK, pydantic or torch through pcfjudge; TRL logs the reward under a name of ours."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.support.basics import ROOT

ALLOWED = {"httpx", "pcfjudge.client.http", "pcfjudge.reward.text", "__future__"}
OURS = ("batches", "service", "trl", "verl")


def test_integrations_import_only_httpx_and_the_standard_library() -> None:
    for name in OURS:
        tree = ast.parse((ROOT / "app" / "pcfjudge" / "integrations" / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        allowed = ALLOWED | {f"pcfjudge.integrations.{n}" for n in OURS}
        assert all(m in allowed or m.split(".")[0] in sys.stdlib_module_names for m in imported), (name, imported)
    for name in ("http",):
        tree = ast.parse((ROOT / "app" / "pcfjudge" / "client" / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert all(m in ALLOWED or m.split(".")[0] in sys.stdlib_module_names for m in imported), (name, imported)
    script = (
        "import sys, pcfjudge.integrations.trl, pcfjudge.integrations.verl\n"
        "heavy = {'fastapi', 'starlette', 'redis', 'openai', 'anthropic', 'uvicorn', 'prometheus_client', 'torch',\n"
        "         'pydantic', 'pydantic_core', 'pydantic_settings'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_batches_keep_groups_whole_and_requests_bounded() -> None:
    from pcfjudge.integrations.batches import MAX_BYTES, MAX_SAMPLES, chunk_groups

    def group(g: int, n: int, size: int = 10) -> list[tuple[int, dict[str, str]]]:
        return [(g * 100 + i, {"prompt": f"p{g}", "response": "x" * size}) for i in range(n)]

    groups = [group(g, 8) for g in range(100)]
    chunks = chunk_groups(groups, max_groups=8)
    assert [len(c) for c in chunks] == [64] * 12 + [32]
    assert [row for c in chunks for row, _ in c] == [row for g in groups for row, _ in g]  # order kept
    many = chunk_groups([group(g, 100) for g in range(5)])
    assert [len(c) for c in many] == [200, 200, 100] and all(len(c) <= MAX_SAMPLES for c in many)
    big = chunk_groups([group(g, 4, size=200_000) for g in range(3)])
    assert [len(c) for c in big] == [4, 4, 4]  # ~800 kB a group: one group a request (under MAX_BYTES = 1 MB)
    assert MAX_BYTES < 2_000_000  # the service's default body limit
    huge = chunk_groups([group(0, 2, size=900_000)])
    assert [len(c) for c in huge] == [2]  # a group larger than the cap is sent whole, alone


def test_importing_the_trl_reward_loads_no_pydantic() -> None:
    """README: the integrations need httpx and the standard library; pcfjudge/__init__ and pcfjudge.client load their
    pydantic models only on first use."""
    script = (
        "import sys\n"
        "import pcfjudge.integrations.trl\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in {'pydantic', 'pydantic_core'})\n"
        "import pcfjudge\n"
        "model = pcfjudge.ListwiseRequest.__name__  # still there, on first use\n"
        "print(loaded, model)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "ListwiseRequest"], done.stdout


def test_trl_logs_the_async_reward_under_its_name_not_acall() -> None:
    """TRL names a reward's columns by ``reward_func.__name__`` and takes the async path when
    ``asyncio.iscoroutinefunction(reward_func)``: ``judge.acall`` must be both, under the judge's name."""
    import asyncio
    import pickle

    from pcfjudge.integrations.trl import PCFJudgeReward

    judge = PCFJudgeReward("http://127.0.0.1:9", reference_column="answer")
    named = PCFJudgeReward("http://127.0.0.1:9", name="judge_consensus")
    reward_funcs = [judge, judge.acall, named.acall]
    assert [f.__name__ for f in reward_funcs] == ["pcfjudge", "pcfjudge", "judge_consensus"]  # TRL's reward_func_names
    assert [asyncio.iscoroutinefunction(f) for f in reward_funcs] == [False, True, True]
    clone = pickle.loads(pickle.dumps(named.acall))  # a reward function TRL may pickle (e.g. to dataloader workers)
    assert clone.__name__ == "judge_consensus" and asyncio.iscoroutinefunction(clone)
    assert clone.args[0].service == named.service
