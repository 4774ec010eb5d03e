"""``pcfjudge calibrate`` argument parsing; the work (``calibrate_run``) is imported when the command runs."""

from __future__ import annotations

import argparse

DEFAULT_ITEMS = 40
DEFAULT_K = 5


def _calibrate(args: argparse.Namespace) -> int:
    from pcfjudge_lab.calibrate.calibrate_run import run_calibrate

    return run_calibrate(args)


def add_calibrate_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "calibrate",
        help="measure judge models on a pinned slice of JudgeBench and RewardBench 2, store the records, "
        "compare with the baseline (drift)",
        description="Each MODEL judges the pinned slice (docs/calibration.md) with K permutations; the records go to "
        "Redis with PCFJ_REDIS_URL, else to PCFJ_CALIBRATION_FILE (default ~/.cache/pcfjudge/calibration.json).",
    )
    parser.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="provider:model, e.g. sim:default openai:gpt-5.4 (default: the service's default model)",
    )
    parser.add_argument(
        "--items",
        type=int,
        default=DEFAULT_ITEMS,
        help=f"the slice's size: its first N items (default {DEFAULT_ITEMS})",
    )
    parser.add_argument("--k", type=int, default=DEFAULT_K, help=f"permutations per item (default {DEFAULT_K})")
    parser.add_argument("--concurrency", type=int, default=4, help="items judged at once per model (default 4)")
    parser.add_argument("--timeout", type=float, default=600.0, help="deadline per item's judgment, seconds")
    parser.add_argument("--rebaseline", action="store_true", help="make these records the slice's new baselines")
    parser.add_argument("--fail-on-drift", action="store_true", help="exit 3 when any model drifted")
    parser.add_argument("--yes", action="store_true", help="skip the cost confirmation before calling a paid model")
    parser.set_defaults(func=_calibrate)
