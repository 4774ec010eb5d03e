"""MkDocs hook: serve MathJax from the site itself, so pages render their equations offline and nothing is fetched
from a CDN, at build time or when read. The copy is MathJax 3's ``es5`` build shipped by the ``django-static-mathjax``
package (Apache-2.0; the ``docs`` extra installs it): ``tex-chtml.js``, its CHTML web fonts and the TeX extensions it
may autoload go to ``assets/mathjax/`` (``mkdocs.yml`` loads ``assets/mathjax/tex-chtml.js``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

TARGET = "assets/mathjax"
WANTED = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions")


def mathjax_root() -> Path:
    spec = importlib.util.find_spec("mathjax")
    if spec is None or spec.origin is None:
        raise PluginError(
            "MathJax is missing: install the docs extra (.venv/bin/pip install -e '.[docs]'), "
            "which brings django-static-mathjax"
        )
    root = Path(spec.origin).parent / "static" / "mathjax" / "es5"
    if not (root / "tex-chtml.js").is_file():
        raise PluginError(f"{root} has no tex-chtml.js: reinstall django-static-mathjax (>= 3.2.2)")
    return root


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = mathjax_root()
    licence = root.parent / "LICENSE"
    sources = [root / part for part in WANTED]
    paths = [p for s in sources for p in ([s] if s.is_file() else sorted(s.rglob("*")))]
    for path in [p for p in paths if p.is_file()]:
        rel = path.relative_to(root).as_posix()
        files.append(File.generated(config, f"{TARGET}/{rel}", abs_src_path=str(path)))
    if licence.is_file():
        files.append(File.generated(config, f"{TARGET}/LICENSE", abs_src_path=str(licence)))
    return files
