"""The old names and where they live now (``MOVED``), and the alias modules that forward to them (``spec_for``):
read by ``pcfjudge._moved``'s finder when a name under ``pcfjudge.`` that nothing else found is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import warnings
from types import ModuleType
from typing import Any

MOVED = {
    "pcfjudge.api.schemas": "pcfjudge.schemas",
    "pcfjudge.api.schemas.common": "pcfjudge.schemas.common",
    "pcfjudge.api.schemas.listwise": "pcfjudge.doors.listwise.listwise_protocol",
    "pcfjudge.api.schemas.pairwise": "pcfjudge.doors.pairwise.pairwise_protocol",
    "pcfjudge.api.schemas.rerank": "pcfjudge.doors.rerank.rerank_protocol",
    "pcfjudge.api.schemas.reward": "pcfjudge.doors.reward.reward_protocol",
    "pcfjudge.judge": "pcfjudge.engine.judge",
    "pcfjudge.judging.listwise": "pcfjudge.engine.listwise_runs",
    "pcfjudge.judging.pairwise": "pcfjudge.engine.pairwise_passes",
    "pcfjudge.judging.runner": "pcfjudge.engine.runner",
    "pcfjudge.metrics": "pcfjudge.telemetry.metrics",
    "pcfjudge.refusal": "pcfjudge.errors",
    "pcfjudge.eval": "pcfjudge_lab.eval",
    "pcfjudge.bench": "pcfjudge_lab.bench",
    "pcfjudge.fakeprovider": "pcfjudge_lab.fakeprovider",
    "pcfjudge.tooling": "pcfjudge_lab",
    # 0.3: each front door is one folder (its wire models, plan builder and routes); the HTTP edge is pcfjudge.http
    "pcfjudge.schemas.listwise_schema": "pcfjudge.doors.listwise.listwise_protocol",
    "pcfjudge.schemas.pairwise_schema": "pcfjudge.doors.pairwise.pairwise_protocol",
    "pcfjudge.schemas.rerank_schema": "pcfjudge.doors.rerank.rerank_protocol",
    "pcfjudge.schemas.reward_schema": "pcfjudge.doors.reward.reward_protocol",
    "pcfjudge.doors.listwise_task": "pcfjudge.doors.listwise.listwise_plan",
    "pcfjudge.doors.pairwise_task": "pcfjudge.doors.pairwise.pairwise_plan",
    "pcfjudge.doors.reward_plan": "pcfjudge.doors.reward.reward_plan",
    "pcfjudge.api.deps": "pcfjudge.http.deps",
    "pcfjudge.api.streaming": "pcfjudge.http.streaming",
    "pcfjudge.api.error_handlers": "pcfjudge.http.error_handlers",
}
"""Old module name → where it lives now (a package's submodules follow it: ``pcfjudge.eval.harness`` →
``pcfjudge_lab.eval.harness``). The lab's old names resolve only where the lab (pcfjudge-lab) is installed; this
table names it as a string and imports it only when an old name is imported, never otherwise."""


def new_name(old: str) -> str | None:
    """Where the module once called ``old`` lives now (None: it did not move)."""
    if old in MOVED:
        return MOVED[old]
    parent, _, leaf = old.rpartition(".")
    if not parent:
        return None
    moved_parent = new_name(parent)
    return f"{moved_parent}.{leaf}" if moved_parent is not None else None


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new}; import it from there (the old name goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        target = importlib.import_module(self.new)

        def forward(name: str) -> Any:
            return getattr(target, name)

        module.__getattr__ = forward  # type: ignore[method-assign]
        module.__all__ = getattr(target, "__all__", [n for n in vars(target) if not n.startswith("_")])  # type: ignore[attr-defined]
        if hasattr(target, "__path__"):  # a package: its old submodules resolve through this finder too
            module.__path__ = []


def spec_for(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """An alias module's spec for an old name (None: not an old name, or its new module is not installed)."""
    new = new_name(fullname)
    if new is None:
        return None
    found = importlib.util.find_spec(new)
    if found is None:
        return None
    return importlib.machinery.ModuleSpec(
        fullname, _Alias(new), is_package=found.submodule_search_locations is not None
    )
