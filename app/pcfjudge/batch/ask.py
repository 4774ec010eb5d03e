"""A yes/no question on the terminal before money is spent (``pcfjudge batch`` and ``pcfjudge eval``)."""

from __future__ import annotations

import sys
from typing import TextIO


def confirm(prompt: str, *, stdin: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    """Ask yes/no on the terminal; with no interactive stdin, refuse (the caller says to pass --yes)."""
    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    if not stdin.isatty():
        return False
    stderr.write(f"{prompt} [y/N] ")
    stderr.flush()
    return stdin.readline().strip().lower() in {"y", "yes"}
