"""Import aliases for the modules that moved in 0.2 (the layered layout) and 0.3 (door folders), kept for one release.

``import pcfjudge.api.schemas.listwise`` (and ``from pcfjudge.judge import Judge``, ``pcfjudge.tooling.eval``, …) still
works: the old name is a module that forwards every attribute to the new one (the same objects), after a
``DeprecationWarning`` naming the new import. Nothing in the package imports an old name; ``pcfjudge/__init__.py``
installs the finder, last on ``sys.meta_path``: it is asked only for names nothing else found, and answers from the
table of old names (``table``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any

from pcfjudge._moved.table import spec_for


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("pcfjudge."):
            return None
        return spec_for(fullname)


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
