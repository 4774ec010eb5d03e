"""MkDocs hook: serve Mermaid from the site itself, so the diagrams render offline and nothing is fetched from a
CDN. mkdocs-material draws ```` ```mermaid ```` blocks with the ``mermaid`` global when a page already defines it (it
fetches unpkg.com otherwise), so ``mkdocs.yml`` loads ``assets/mermaid/mermaid.min.js``, copied here from the npm
package that ``scripts/test.sh`` unpacks into ``.venv/npm/mermaid`` (MIT; ``MERMAID_VERSION`` there).

Without that package (``pip install -e '.[docs]'`` alone does not bring it: it is an npm package), ``mkdocs serve``
still serves the site: it says so once, and the diagrams are left to mkdocs-material (drawn from unpkg.com when the
browser is online, shown as their Mermaid source otherwise). ``mkdocs build`` (what CI and the tests run) refuses, so a
built site never depends on a CDN. Either way the message gives the one command that installs it.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / ".venv" / "npm" / "mermaid"
TARGET = "assets/mermaid"
LOG = logging.getLogger("mkdocs.hooks.mermaid")

_command = "build"  # the mkdocs command being run (on_startup)


def mermaid_version() -> str:
    """``MERMAID_VERSION`` of ``scripts/test.sh`` (the version the site is built and tested with)."""
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    found = re.search(r"^MERMAID_VERSION=(\S+)$", script, re.M)
    return found[1] if found else "11"


def install_command() -> str:
    """A shell command, run at the repository root, that puts the Mermaid package where this hook reads it."""
    version = mermaid_version()
    return (
        f"mkdir -p .venv/npm && (cd .venv/npm && npm pack mermaid@{version} && tar xzf mermaid-{version}.tgz && "
        f"rm -rf mermaid && mv package mermaid && rm mermaid-{version}.tgz)"
    )


def missing_message(script: Path) -> str:
    return (
        f"Mermaid is not installed ({script} is missing): it is an npm package, not part of the docs extra. "
        f"Install it (needs npm) with: {install_command()}  (bash scripts/test.sh does this too)"
    )


def on_startup(command: str, dirty: bool) -> None:
    global _command
    _command = command


def on_files(files: Files, config: MkDocsConfig) -> Files:
    script = PACKAGE / "dist" / "mermaid.min.js"
    if not script.is_file():
        if _command != "serve":
            raise PluginError(missing_message(script))
        # A local preview: say so (at INFO: a warning would abort `mkdocs serve` under strict: true) and serve a
        # stand-in that leaves the diagrams to mkdocs-material.
        LOG.info(
            "%s. Serving without it: diagrams are drawn from unpkg.com if the browser is online.",
            missing_message(script),
        )
        stand_in = f"console.warn({json.dumps(missing_message(script))});\n"
        files.append(File.generated(config, f"{TARGET}/mermaid.min.js", content=stand_in))
        return files
    files.append(File.generated(config, f"{TARGET}/mermaid.min.js", abs_src_path=str(script)))
    licence = PACKAGE / "LICENSE"
    if licence.is_file():
        files.append(File.generated(config, f"{TARGET}/LICENSE", abs_src_path=str(licence)))
    return files
