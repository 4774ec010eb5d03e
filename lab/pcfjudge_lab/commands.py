"""The lab's commands of ``pcfjudge``: ``fake-provider``, ``eval``, ``bench`` and ``calibrate``.

The service's command (``pcfjudge.cli.main``) adds them when this distribution (pcfjudge-lab) is installed, and
otherwise says how to install it. Adding them is argparse only: each command imports its work when it runs.
"""

from __future__ import annotations

import argparse

COMMANDS = ("fake-provider", "eval", "bench", "calibrate")
"""The names; ``pcfjudge.cli.main.LAB_COMMANDS`` repeats them (the service must know them without the lab)."""


def add_lab_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pcfjudge_lab.bench.bench_command import add_bench_commands
    from pcfjudge_lab.calibrate.calibrate_command import add_calibrate_command
    from pcfjudge_lab.eval.eval_command import add_eval_commands
    from pcfjudge_lab.fakeprovider.fake_command import add_fake_provider_command

    add_fake_provider_command(sub)
    add_eval_commands(sub)
    add_bench_commands(sub)
    add_calibrate_command(sub)
