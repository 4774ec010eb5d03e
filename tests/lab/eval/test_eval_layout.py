"""The eval commands and their argparse wiring import in one direction only: ``eval_command`` → commands → ``options``
(no import circle between ``eval_command.py`` and the two eval commands)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.basics import ROOT

EVAL = ROOT / "lab" / "pcfjudge_lab" / "eval"


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_no_command_imports_the_cli_and_options_import_no_command() -> None:
    for command in EVAL.glob("*/command.py"):
        assert "pcfjudge_lab.eval.eval_command" not in imported(command), command
    assert not {m for m in imported(EVAL / "options.py") if m.startswith("pcfjudge_lab.eval")}
