"""The documentation tells the truth: every example marked ``<!-- run -->`` in README.md and docs/ runs and prints what
the page shows, the site builds with ``mkdocs build --strict`` (no broken link, anchor or nav entry) and serves its
own MathJax, and every setting is documented.

An executed example is a code block right after a line that is exactly ``<!-- run -->``, followed by the block that shows its output
(``json`` or ``text``). Each page's examples run in order against one fresh ``pcfjudge serve`` on embedded defaults
(simulated judge, in-process cache), as a reader following the page would: a later example may hit the cache an
earlier one filled. ``curl`` commands are sent with httpx (curl itself is not needed), other ``bash`` blocks run in
bash (``.venv/bin/`` is this interpreter's bin directory) and ``python`` blocks run in this interpreter; the
address ``localhost:8000`` / ``127.0.0.1:8000`` in them becomes the test server's. JSON outputs are compared as
data, leaving out what differs on every call (``request_id``, Cohere's ``id``, ``latency_ms``).

When the service's answers change on purpose (a new prompt version, new fields), rewrite the shown outputs and
review the diff::

    .venv/bin/python -m tests.docs.test_docs --update
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.support.basics import NO_CALIBRATION, ROOT, SCRUBBED_ENV_PREFIXES
from tests.support.processes import serve_process

DOCS = ROOT / "docs"
MARK = "<!-- run -->"
SHOWN_HOSTS = ("http://localhost:8000", "http://127.0.0.1:8000", "localhost:8000", "127.0.0.1:8000")
VOLATILE = {"request_id", "latency_ms"}
EXAMPLE = re.compile(
    "^" + re.escape(MARK) + r"\n```(?P<lang>\w+)\n(?P<code>.*?)\n```\n\n?```(?P<out_lang>\w+)\n(?P<out>.*?)\n?```",
    re.S | re.M,
)
MARK_LINE = re.compile("^" + re.escape(MARK) + "$", re.M)
BIN = Path(sys.executable).parent


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)]


@dataclass
class Example:
    page: Path
    line: int
    lang: str
    code: str
    out_lang: str
    out: str
    out_span: tuple[int, int]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> list[Example]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in EXAMPLE.finditer(text):
        line = text.count("\n", 0, m.start()) + 2
        found.append(Example(page, line, m["lang"], m["code"], m["out_lang"], m["out"], (m.start("out"), m.end("out"))))
    marks = len(MARK_LINE.findall(text))
    assert marks == len(found), (
        f"{page.relative_to(ROOT)}: {marks} '{MARK}' marks but {len(found)} examples: each mark must be followed by "
        "a code block and, right after it, the block showing its output"
    )
    return found


# ── running one example ─────────────────────────────────────────────────────────────────────────────────────────


def retarget(code: str, url: str) -> str:
    host = url.removeprefix("http://")
    for shown in SHOWN_HOSTS:
        code = code.replace(shown, url if shown.startswith("http") else host)
    return code.replace(".venv/bin/", f"{BIN}/")


def environment(url: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV_PREFIXES)}
    return (
        kept | NO_CALIBRATION | {"PCFJ_URL": url, "PATH": f"{BIN}{os.pathsep}{kept.get('PATH', '')}", "COLUMNS": "120"}
    )


def run_curl(code: str, url: str) -> str:
    argv = shlex.split(code.replace("\\\n", " "))
    assert argv[0] == "curl", code
    method, headers, body, target = "GET", {}, None, None
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-s", "-sS", "--silent"):
            continue
        if arg in ("-H", "--header"):
            name, _, value = next(args).partition(":")
            headers[name.strip()] = value.strip()
        elif arg in ("-d", "--data"):
            body, method = next(args), "POST" if method == "GET" else method
        elif arg in ("-X", "--request"):
            method = next(args)
        else:
            assert target is None and not arg.startswith("-"), f"unsupported curl argument {arg!r} in {code}"
            target = arg
    assert target is not None, code
    target = retarget(target, url)
    target = target if target.startswith("http") else f"http://{target}"
    answer = httpx.request(method, target, headers=headers, content=body, timeout=120)
    return answer.text


def run(example: Example, url: str, cwd: Path) -> str:
    code = example.code
    if example.lang == "bash" and code.startswith("curl "):
        return run_curl(code, url)
    if example.lang == "bash":
        argv = ["bash", "-c", "set -euo pipefail\n" + retarget(code, url)]
    elif example.lang == "python":
        argv = [sys.executable, "-c", retarget(code, url)]
    else:
        raise AssertionError(f"{example.where}: cannot run a {example.lang!r} block")
    done = subprocess.run(argv, capture_output=True, text=True, env=environment(url), cwd=cwd, timeout=300)
    assert done.returncode == 0, f"{example.where} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


# ── comparing ───────────────────────────────────────────────────────────────────────────────────────────────────


def normalised(value: Any) -> Any:
    """``value`` without what changes on every call (request ids, latencies, a Cohere answer's ``id``)."""
    if isinstance(value, dict):
        cohere = "results" in value and "id" in value
        return {k: normalised(v) for k, v in value.items() if k not in VOLATILE and not (cohere and k == "id")}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def text_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def matches(example: Example, got: str) -> bool:
    if example.out_lang == "json":
        return normalised(json.loads(got)) == normalised(json.loads(example.out))
    return text_lines(got) == text_lines(example.out)


# ── rewriting shown outputs (--update) ──────────────────────────────────────────────────────────────────────────


def keep_volatile(new: Any, old: Any) -> Any:
    """``new`` with the volatile values ``old`` showed at the same places (so an update does not churn them)."""
    if isinstance(new, dict) and isinstance(old, dict):
        cohere = "results" in new and "id" in new
        out = {}
        for k, v in new.items():
            same = k in old and (k in VOLATILE or (cohere and k == "id"))
            out[k] = old[k] if same else keep_volatile(v, old.get(k))
        return out
    if isinstance(new, list) and isinstance(old, list):
        return [keep_volatile(v, old[i] if i < len(old) else None) for i, v in enumerate(new)]
    return new


def nested(items: list[Any]) -> bool:
    return any(isinstance(v, (dict, list)) for v in items)


def compact(value: Any, indent: int = 0, width: int = 118) -> str:
    """JSON with every value on one line that fits in ``width`` or holds no object or list (one candidate, one run per
    line), else opened one level."""
    flat = json.dumps(value, ensure_ascii=False)
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    leaf = indent > 0 and not any(isinstance(v, dict) or (isinstance(v, list) and nested(v)) for v in children)
    if len(flat) + indent <= width or leaf or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {compact(v, indent + 2, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def shown_output(example: Example, got: str) -> str:
    if example.out_lang == "json":
        return compact(keep_volatile(json.loads(got), json.loads(example.out)))
    return "\n".join(text_lines(got))


# ── one page ────────────────────────────────────────────────────────────────────────────────────────────────────


def check_page(page: Path, update: bool = False) -> list[str]:
    """Run the page's examples in order against one fresh ``pcfjudge serve``; the mismatches (or, with ``update``,
    rewrite the page's shown outputs)."""
    found = examples(page)
    if not found:
        return []
    problems = []
    replacements = []
    with serve_process() as url, tempfile.TemporaryDirectory() as workdir:
        for example in found:
            got = run(example, url, Path(workdir))
            if update and shown_output(example, got) != example.out:
                replacements.append((example.out_span, shown_output(example, got)))
            if matches(example, got):
                continue
            problems.append(
                f"{example.where}: the {example.lang} example printed\n{got.strip()}\nbut the page shows\n{example.out}"
            )
    if update and replacements:
        text = page.read_text(encoding="utf-8")
        for (start, end), new in sorted(replacements, reverse=True):
            text = text[:start] + new + ("\n" if start == end else "") + text[end:]
        page.write_text(text, encoding="utf-8")
    return problems


PAGES_WITH_EXAMPLES = [p for p in pages() if MARK_LINE.search(p.read_text(encoding="utf-8"))]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_examples_print_what_the_page_shows(page: Path) -> None:
    problems = check_page(page)
    assert not problems, (
        "\n\n".join(problems) + "\n\nIf the change is intended: .venv/bin/python -m tests.docs.test_docs --update, "
        "then review the diff"
    )


def test_examples_are_well_formed() -> None:
    """Every mark is followed by a runnable block and its output; the README and the site have examples."""
    every = [e for page in pages() for e in examples(page)]
    assert {e.page for e in every} >= {ROOT / "README.md", DOCS / "getting-started.md"}
    for e in every:
        assert e.lang in ("bash", "python"), e.where
        assert e.out_lang in ("json", "text"), e.where
        if e.out_lang == "json":
            json.loads(e.out)


# ── the site ────────────────────────────────────────────────────────────────────────────────────────────────────


def load_hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", DOCS / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_setting_is_documented() -> None:
    """The settings page is generated from ``Settings``: every field needs a meaning, in its ``Field(description=)``
    or in ``docs/hooks/settings_table.py``'s ``MEANINGS``."""
    from pcfjudge.settings import FIELDS

    hook = load_hook("settings_table")
    fields = FIELDS
    missing = [name for name, info in fields.items() if not (info.description or name in hook.MEANINGS)]
    assert not missing, f"give these settings a Field(description=...) in app/pcfjudge/settings.py: {missing}"
    assert not set(hook.MEANINGS) - set(fields), "MEANINGS names settings that no longer exist"
    table = hook.table()
    for name, info in fields.items():
        assert hook.env_names(name, info)[0] in table
    page = (DOCS / "operations" / "settings.md").read_text(encoding="utf-8")
    assert hook.MARKER in page


def test_every_request_field_is_documented() -> None:
    """Each front door's page names every field its request models accept."""
    from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
    from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest
    from pcfjudge.doors.rerank.rerank_protocol import CohereRerankRequest, RerankOptions, TeiRerankRequest
    from pcfjudge.doors.reward.reward_protocol import RewardRequest, RewardSample

    pages = {
        "api/listwise.md": [ListwiseRequest],
        "api/pairwise.md": [PairwiseRequest],
        "rerank.md": [CohereRerankRequest, TeiRerankRequest, RerankOptions],
        "rewards.md": [RewardRequest, RewardSample],
    }
    for page, models in pages.items():
        text = (DOCS / page).read_text(encoding="utf-8")
        for model in models:
            missing = [name for name in model.model_fields if f"`{name}`" not in text and f'"{name}"' not in text]
            assert not missing, f"docs/{page} does not document {model.__name__}'s {missing}"


@pytest.fixture(scope="module")
def site() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", out],
            cwd=ROOT,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        yield Path(out)


@pytest.mark.slow
def test_the_site_builds_strictly_and_loads_nothing_from_outside(site: Path) -> None:
    assert (site / "assets" / "mathjax" / "tex-chtml.js").is_file()
    assert any((site / "assets" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    method = (site / "method" / "index.html").read_text(encoding="utf-8")
    assert method.count('class="arithmatex"') >= 5  # Eq. 1-5
    assert "assets/mathjax/tex-chtml.js" in method
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        remote = re.findall(r"""<(?:script|link)[^>]*(?:src|href)=["'](?:https?:)?//[^"']+""", text)
        assert not remote, f"{html.relative_to(site)} loads {remote}"
    settings = (site / "operations" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "PCFJ_REDIS_URL" in settings and "settings-table" not in settings


def main(argv: list[str]) -> int:
    update = "--update" in argv
    chosen = [ROOT / a for a in argv if not a.startswith("--")] or PAGES_WITH_EXAMPLES
    failed = 0
    for page in chosen:
        problems = check_page(page, update=update)
        failed += len(problems)
        print(f"{page.relative_to(ROOT)}: {len(examples(page))} examples, {len(problems)} printed something else")
        if problems and not update:
            print("\n\n".join(problems))
    return 0 if update or not failed else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
