"""What the eval commands share of their command line: K lists, the common checks, the reproducing command.

A leaf of ``pcfjudge_lab.eval``: ``eval.cli`` (argparse) and each command (``judgebench.command``,
``rewardbench2.command``) import it, so neither imports the other.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence

from pcfjudge.surface import MAX_K


def parse_ks(text: str) -> tuple[int, ...]:
    """'3,5,7' -> (3, 5, 7); each K must be an integer in 1..MAX_K."""
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers such as 3,5,7 (got {text!r})") from None
    if not ks or ks[0] < 1 or ks[-1] > MAX_K:
        raise ValueError(f"--k values must be between 1 and {MAX_K} (got {text!r})")
    return tuple(ks)


def parse_k_option(text: str) -> tuple[tuple[int, ...], bool]:
    """'3,5,7,auto' -> ((3, 5, 7), True); 'auto' alone means 3,5,7 and auto (adaptive K)."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    auto = "auto" in parts
    fixed = ",".join(part for part in parts if part != "auto")
    return (parse_ks(fixed) if fixed or not auto else (3, 5, 7)), auto


def check_common(args: argparse.Namespace) -> str | None:
    if args.limit is not None and args.limit < 1:
        return "--limit must be at least 1"
    if args.concurrency < 1:
        return "--concurrency must be at least 1"
    if args.timeout <= 0:
        return "--timeout must be positive"
    return None


def command_line(words: Sequence[str], args: argparse.Namespace, options: Sequence[str]) -> str:
    """The command that reproduces this run (so a report says exactly how it was made)."""
    parts = ["pcfjudge", *words]
    for name in options:
        value = getattr(args, name.replace("-", "_"))
        if value is None or value is False:
            continue
        parts += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return shlex.join(parts)
