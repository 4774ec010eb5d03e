"""``pcfjudge eval …`` argument parsing and checks; each command's work is imported lazily when it runs."""

from __future__ import annotations

import argparse


def _rewardbench2(args: argparse.Namespace) -> int:
    from pcfjudge_lab.eval.rewardbench2.command import run_rewardbench2

    return run_rewardbench2(args)


def _judgebench(args: argparse.Namespace) -> int:
    from pcfjudge_lab.eval.judgebench.command import run_judgebench

    return run_judgebench(args)


def _score(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from pcfjudge_lab.eval.score import format_markdown, score_judgments_file

    try:
        result = score_judgments_file(Path(args.file))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.format == "json" else format_markdown(result), end="\n")
    return 0


def _common(parser: argparse.ArgumentParser, default_model: str) -> None:
    parser.add_argument(
        "--model",
        default=default_model,
        help=f"provider:model (default {default_model}), or a jury: a PCFJ_JURIES name or comma-separated models "
        "(each juror evaluated alone in OUT/<provider>-<model>/, then jury rows beside theirs)",
    )
    parser.add_argument("--limit", type=int, default=None, help="judge only the first N items")
    parser.add_argument("--out", required=True, help="output directory (run log, report, figures); reuse to resume")
    parser.add_argument("--server", default=None, help="judge through a deployed service at this URL instead")
    parser.add_argument("--yes", action="store_true", help="skip the cost confirmation before a paid run")
    parser.add_argument("--concurrency", type=int, default=4, help="items judged at once (default 4)")
    parser.add_argument("--timeout", type=float, default=600.0, help="deadline per judging request, seconds")
    parser.add_argument(
        "--batch",
        nargs="?",
        const="api",
        choices=["api", "vllm"],
        default=None,
        help="make the calls offline first: the provider's batch API at the batch price (PCFJ_BATCH_PRICE_FACTOR), "
        "or 'vllm' for a vllm run-batch file; waits, collects into the cache, then computes the same tables "
        "(docs/batch.md)",
    )


def _hub_repo(parser: argparse.ArgumentParser, repo: str) -> None:
    parser.add_argument(
        "--hub-repo",
        default=None,
        help=f"with --data hub: the dataset id, or a directory holding a downloaded copy of it (default {repo})",
    )


def add_eval_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``eval rewardbench2|judgebench|score`` under the ``pcfjudge`` parser."""
    evaluate = sub.add_parser("eval", help="reproduce the paper's tables (RewardBench 2, JudgeBench) or score a file")
    commands = evaluate.add_subparsers(dest="eval_command", metavar="BENCHMARK", required=True)

    rb2 = commands.add_parser(
        "rewardbench2", help="PCFJudge vs direct on RewardBench 2 Factuality (paper Tables 1-3, Figure 1)"
    )
    rb2.add_argument(
        "--data",
        required=True,
        help="'rewardbench2:sample' (6 Factuality items shipped with pcfjudge), 'hub' (the full allenai/reward-bench-2; "
        "needs the [hub] extra), 'synthetic:N' (N generated items, for the simulated oracle judge) or a "
        "RewardBench 2 JSONL/Parquet file",
    )
    _hub_repo(rb2, "allenai/reward-bench-2")
    _common(rb2, "sim:oracle")
    rb2.add_argument(
        "--k",
        default="3,5,7",
        help="comma-separated K values (default 3,5,7); the largest is run. Add 'auto' (alone: 3,5,7,auto) to set "
        "adaptive K (certified and confident stopping, k_min..largest K) beside them, replayed from the same runs",
    )
    rb2.add_argument("--k-min", type=int, default=3, help="with --k auto: runs before any stop (default 3)")
    rb2.add_argument("--executions", type=int, default=3, help="PCFJudge executions aggregated (default 3)")
    rb2.add_argument("--seed", type=int, default=0, help="seed of the per-item candidate shuffle (default 0)")
    rb2.add_argument("--schedule-seed", type=int, default=0, help="seed of the permutation schedule (default 0)")
    rb2.set_defaults(func=_rewardbench2)

    jb = commands.add_parser("judgebench", help="APOCJudge vs direct on JudgeBench (paper Table 4)")
    jb.add_argument(
        "--data",
        required=True,
        help="'judgebench:gpt-4o' (350 pairs) or 'judgebench:claude-3-5-sonnet' (270), both shipped with pcfjudge; "
        "'hub' / 'hub:claude' (ScalerLab/JudgeBench from the hub; needs the [hub] extra) or a JudgeBench JSONL file",
    )
    _hub_repo(jb, "ScalerLab/JudgeBench")
    _common(jb, "sim:oracle")
    jb.set_defaults(func=_judgebench)

    score = commands.add_parser("score", help="score a JudgeBench-format judgments file (JudgeBench's metric)")
    score.add_argument("file", help="JSONL with label, source and judgments (two games, the 2nd swapped)")
    score.add_argument("--format", choices=["json", "md"], default="json")
    score.set_defaults(func=_score)
