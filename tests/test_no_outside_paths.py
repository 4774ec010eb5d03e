"""Nothing in the project reads a path outside the repository: a clone anywhere, with nothing beside it, runs every test.

The package, the tests and the scripts are scanned for paths of one particular machine (absolute home or work
directories) and for relative paths that climb out of the checkout (``../shared``, ``parents[1].parent``). Benchmark
data comes from the package itself (``pcfjudge_lab/data/``, see ``pcfjudge_lab.eval.data``); a user's own files come from
the command line.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.basics import ROOT

SCANNED = ("app", "tests", "scripts", "pyproject.toml")  # deploy/ and docker/ name paths inside images, not here
SUFFIXES = {".py", ".sh", ".js", ".html", ".css", ".toml", ".yaml", ".yml", ".json", ".cfg", ".ini", ".txt", ""}
SKIPPED_DIRS = {"__pycache__", ".venv", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
OUTSIDE = re.compile(
    "|".join(
        (
            r"/work/",  # this machine's workspace
            r"(?<![\w.])/(?:root|home|mnt|opt)/",  # someone's home or a mounted disk
            r"\.\./shared|shared/data",  # the benchmark data as it was laid out beside one checkout
            r"\.\.(?:/\.\.)+/",  # climbing more than one level (out of tests/ or app/)
            r"parents\[\d+\]\.parent",  # Path(__file__).resolve().parents[1].parent: the directory above the clone
        )
    )
)


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for entry in SCANNED:
        path = ROOT / entry
        if path.is_file():
            files.append(path)
            continue
        for found in sorted(path.rglob("*")):
            if found.is_file() and found.suffix in SUFFIXES and not SKIPPED_DIRS & set(found.parts):
                files.append(found)
    return files


def test_the_scan_sees_the_tree() -> None:
    files = {f.relative_to(ROOT).as_posix() for f in scanned_files()}
    assert {
        "app/pcfjudge/cli/main.py",
        "tests/lab/eval/test_eval_loaders.py",
        "scripts/test.sh",
        "pyproject.toml",
    } <= files


def test_the_pattern_catches_what_it_is_for() -> None:
    caught = [
        'Path("/work/shared/data/judgebench")',
        'SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"',
        '"../shared/data/rewardbench2/factuality-sample.jsonl"',
        'open("/home/alice/judgebench.jsonl")',
        '"../../outside/file.jsonl"',
    ]
    assert all(OUTSIDE.search(line) for line in caught)
    allowed = ["ROOT = Path(__file__).resolve().parents[2]", '"/usr/bin/chromium"', '"static/vendor/x.js"']
    assert not any(OUTSIDE.search(line) for line in allowed)


def test_no_file_refers_to_a_path_outside_the_repository() -> None:
    hits = []
    for path in scanned_files():
        if path == Path(__file__):
            continue  # its patterns and examples are the point
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary data (e.g. a PNG fixture) holds no paths we write
        where = path.relative_to(ROOT).as_posix()
        hits += [
            f"{where}:{n}: {line.strip()[:160]}" for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)
        ]
    assert hits == [], (
        "these refer outside the repository (read pcfjudge_lab/data/ or tmp_path instead):\n" + "\n".join(hits)
    )
