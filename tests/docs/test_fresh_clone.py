"""The pages' own commands work as written from a fresh clone (issue 36 item 6): the README names the interpreter its
Python examples run in, no command hides its errors, the docs site serves after the documented install (the Mermaid
hook degrades with a clear message when the npm package is missing) and every framework client's package is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mkdocs.config import load_config
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files

from tests.docs.test_docs import DOCS, pages
from tests.support.basics import ROOT


def test_the_readme_names_the_python_interpreter_before_its_first_python_example() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_python = readme.index("```python")
    assert ".venv/bin/python" in readme[:first_python]


def test_no_documented_command_hides_its_errors() -> None:
    hidden = [f"{p.relative_to(ROOT)}" for p in pages() if "2>/dev/null" in p.read_text(encoding="utf-8")]
    assert not hidden, f"these pages discard a command's stderr: {hidden}"
    reproducing = (DOCS / "reproducing.md").read_text(encoding="utf-8")
    assert "pip install -e '.[eval]'" in reproducing


def test_haystacks_tei_ranker_package_is_named_where_haystack_is_shown() -> None:
    rerank = (DOCS / "rerank.md").read_text(encoding="utf-8")
    assert "HuggingFaceTEIRanker" in rerank and "huggingface-api-haystack" in rerank
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for package in re.findall(r"`([a-z0-9-]+-haystack)`", rerank):
        assert f'"{package}' in pyproject, f"{package} is not the package the tests install"


def test_mkdocs_serve_without_mermaid_serves_and_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The hook as mkdocs loads it from mkdocs.yml, its files event run as mkdocs runs it, without the npm package."""
    config = load_config(str(ROOT / "mkdocs.yml"))
    hook = config.plugins["docs/hooks/mermaid.py"]
    monkeypatch.setattr(hook, "PACKAGE", tmp_path / "no-mermaid-here")
    config.plugins.on_startup(command="serve", dirty=False)
    with caplog.at_level("INFO", logger="mkdocs.hooks.mermaid"):
        files = config.plugins.on_files(Files([]), config=config)
    [stand_in] = [f for f in files if f.src_uri == "assets/mermaid/mermaid.min.js"]
    assert "Mermaid is not installed" in stand_in.content_string
    [message] = [r.getMessage() for r in caplog.records if r.name == "mkdocs.hooks.mermaid"]
    assert "npm pack mermaid@" in message and "Serving without it" in message
    config.plugins.on_startup(command="build", dirty=False)
    with pytest.raises(PluginError, match=r"npm pack mermaid@\d"):
        config.plugins.on_files(Files([]), config=config)
