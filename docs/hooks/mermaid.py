"""MkDocs hook: serve Mermaid from the site itself, so the diagrams render offline and nothing is fetched from a
CDN. mkdocs-material draws ```` ```mermaid ```` blocks with the ``mermaid`` global when a page already defines it (it
fetches unpkg.com otherwise), so ``mkdocs.yml`` loads ``assets/mermaid/mermaid.min.js``, copied here from the npm
package that ``scripts/test.sh`` unpacks into ``.venv/npm/mermaid`` (MIT; ``MERMAID_VERSION`` there)."""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

PACKAGE = Path(__file__).resolve().parents[2] / ".venv" / "npm" / "mermaid"
TARGET = "assets/mermaid"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    script = PACKAGE / "dist" / "mermaid.min.js"
    if not script.is_file():
        raise PluginError(f"{script} is missing: run `bash scripts/test.sh --co` (it unpacks mermaid from npm)")
    files.append(File.generated(config, f"{TARGET}/mermaid.min.js", abs_src_path=str(script)))
    licence = PACKAGE / "LICENSE"
    if licence.is_file():
        files.append(File.generated(config, f"{TARGET}/LICENSE", abs_src_path=str(licence)))
    return files
