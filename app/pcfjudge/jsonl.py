"""Append-only JSON-lines files that survive a crash: each line is flushed as it is written, and a torn last line
(a process killed mid-write) never swallows the next one. The eval run log and the batch results use it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO


class JsonlAppender:
    """Appends one JSON object per line to ``path``, opened (and its parent made) on the first write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: TextIO | None = None

    def write(self, line: dict[str, Any]) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn = self.path.exists() and self.path.stat().st_size > 0 and not _ends_with_newline(self.path)
            self._handle = self.path.open("a", encoding="utf-8")
            if torn:
                self._handle.write("\n")  # keep a torn last line from swallowing this one
        self._handle.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"
