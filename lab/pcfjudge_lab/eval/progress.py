"""Progress (tqdm on stderr: calls done, ETA, tokens and running cost) and the paid-run confirmation."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pcfjudge.surface import Usage, confirm, usd

from pcfjudge_lab.eval.report_fmt import is_simulation

EVAL_EXTRA_HINT = (
    "the eval commands need the lab's dependencies: pip install -e ./lab (in a clone) or pip install pcfjudge-lab"
)


def missing_eval_extra() -> str | None:
    """An error message if matplotlib or tqdm cannot be imported, else None."""
    try:
        import matplotlib  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as exc:
        return f"{EVAL_EXTRA_HINT} ({exc})"
    return None


class Progress:
    """A tqdm bar over planned backend calls; each logged line advances it and adds its (uncached) tokens."""

    def __init__(self, total: int, desc: str, price: tuple[float, float] | None, *, enabled: bool = True) -> None:
        from tqdm import tqdm

        self.price = price
        self.usage = Usage()
        self.calls = 0
        self.errors = 0
        self._bar = tqdm(total=total, desc=desc, unit="call", file=sys.stderr, disable=not enabled, dynamic_ncols=True)

    def advance(self, line: Mapping[str, Any], *, unplanned: bool = False) -> None:
        """Count one logged line; ``unplanned`` lines (e.g. keyed passes) also grow the total."""
        if unplanned and self._bar.total is not None:
            self._bar.total += 1
        if not line.get("cached"):
            self.calls += 1
        self.usage += Usage.from_dict(line.get("usage"))
        self.errors += line.get("error") is not None
        postfix = f"tok in {self.usage.input_tokens:,} out {self.usage.output_tokens:,}"
        if self.price is not None:
            postfix += f" · ${usd(self.usage.input_tokens, self.usage.output_tokens, self.price):.2f}"
        else:
            postfix += " · $ n/a (no price set)"
        if self.errors:
            postfix += f" · {self.errors} failed"
        self._bar.set_postfix_str(postfix, refresh=False)
        self._bar.update(1)

    def write(self, message: str) -> None:
        self._bar.write(message, file=sys.stderr)

    def close(self) -> None:
        self._bar.close()


@dataclass(frozen=True)
class Estimate:
    calls: int
    input_tokens: int
    max_output_tokens: int

    def describe(self, model: str, price: tuple[float, float] | None) -> str:
        text = (
            f"{model}: about {self.calls:,} backend calls, ~{self.input_tokens:,} input tokens (characters/4) "
            f"and at most {self.max_output_tokens:,} output tokens"
        )
        if price is not None:
            text += f"; at most ${usd(self.input_tokens, self.max_output_tokens, price):,.2f} at the configured price"
        else:
            text += f" (set PCFJ_PRICES='{{\"{model}\": [input_usd_per_mtok, output_usd_per_mtok]}}' for a cost)"
        return text


def paid_run_gate(model: str, estimate: Estimate, price: tuple[float, float] | None, *, yes: bool) -> str | None:
    """Before calls to a real (paid) model: print the estimate and ask; returns an error message to stop."""
    if is_simulation(model) or estimate.calls == 0:
        return None
    print(f"Estimate: {estimate.describe(model, price)}.", file=sys.stderr)
    if yes:
        return None
    if not sys.stdin.isatty():
        return "this run calls a paid model and there is no terminal to confirm on; pass --yes to proceed"
    if not confirm("Proceed?"):
        return "aborted; nothing was called"
    return None
