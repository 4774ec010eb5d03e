"""MkDocs hook: the settings reference (``docs/operations/settings.md``) is generated from ``pcfjudge.settings`` at
build time, so its variables, defaults and meanings are the code's. The page holds the marker ``<!-- settings-table
-->``; every ``Settings`` field becomes one row under its group (``settings.<group>``, titled by the group's
docstring). A field
without a ``description=`` takes its meaning from ``MEANINGS`` below (``tests/docs/test_docs.py`` fails on a field that has
neither)."""

from __future__ import annotations

import json
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from pydantic import AliasChoices, SecretStr
from pydantic.fields import FieldInfo

MARKER = "<!-- settings-table -->"
PAGE = "operations/settings.md"

# Meanings of the fields whose Field() has no description (a description in settings.py wins).
MEANINGS = {
    "openai_default_model": "OpenAI model used when the default model is OpenAI's (`openai:<this>`)",
    "anthropic_default_model": "Anthropic model used when the default model is Anthropic's (`anthropic:<this>`)",
    "min_candidates": "fewest candidates a listwise request may send",
    "max_candidates": "the window: most candidates (rerank documents, reward responses) one prompt shows; past it, "
    "rounds of windows fitted onto one scale",
    "max_question_chars": "longest question (characters)",
    "max_candidate_chars": "longest candidate answer (characters)",
    "max_body_bytes": "largest request body; larger bodies get 413",
    "default_k": 'permutations per execution when a request gives no `k` (also `k_max` of `"k": "auto"`)',
    "max_executions": "most independent executions a request may ask for",
    "retry_base_s": "first backoff of our per-call retries (jittered, doubling, honouring `Retry-After`)",
    "retry_max_s": "longest backoff between two retries of one call",
    "log_format": "`text` or `json` log lines (also `pcfjudge serve --log-format`)",
    "cache_max_entries": "entries the in-process LRU cache keeps",
    "cache_ttl_s": "lifetime of a cache entry (in process and in Redis)",
    "sim_seed": "simulated judge: seed of its latent qualities and noise (its verdicts are seeded draws)",
    "sim_position_bias": "simulated judge: points added to the candidate shown first, falling to 0 at the last",
    "sim_target_accuracy": "simulated judge: `sim:oracle`'s calibrated direct accuracy",
    "sim_latency_ms": "simulated judge: latency per call (drawn between 0.5× and 1.5× of this)",
    "sim_fail_rate": "simulated judge: share of calls that fail (to exercise retries and quorum)",
    "openai_api_key": "OpenAI (or compatible server) key; turns the OpenAI backend on",
    "openai_base_url": "an OpenAI-compatible server's base URL (vLLM, Ollama, LiteLLM, llama.cpp, …)",
    "anthropic_api_key": "Anthropic key; turns the Anthropic backend on",
    "anthropic_base_url": "Anthropic base URL (e.g. the fake provider)",
    "temperature": "decoding temperature (part of the cache key); not sent with a reasoning effort on OpenAI",
    "max_output_tokens": "most output tokens per judge call (part of the cache key)",
}


def env_names(name: str, info: FieldInfo) -> list[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [f"PCFJ_{name.upper()}"]


def default_text(info: FieldInfo) -> str:
    value: Any = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, SecretStr):
        return "(set)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (list, dict)):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def meaning(name: str, info: FieldInfo) -> str:
    """The field's meaning as one table cell: pipes escaped, and ``<`` / ``>`` outside code spans as entities (a
    description's ``name:sha256:<hex>`` is text, not an HTML tag)."""
    text = (info.description or MEANINGS.get(name, "")).replace("|", "\\|").replace("\n", " ")
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def table() -> str:
    from pcfjudge.settings import Settings, group_type

    out: list[str] = []
    for attribute in Settings.model_fields:
        group = group_type(attribute)
        title = (group.__doc__ or group.__name__).strip().split(" (")[0].rstrip(".") + f" (`settings.{attribute}`)"
        rows = []
        for name in group.__annotations__:  # the group's own fields, in the order settings.py declares them
            info = group.model_fields[name]
            names = " / ".join(f"`{n}`" for n in env_names(name, info))
            rows.append(f"| {names} | {default_text(info)} | {meaning(name, info)} |")
        out += [f"### {title}", "", "| variable | default | meaning |", "|---|---|---|", *rows, ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri == PAGE:
        return markdown.replace(MARKER, table())
    return markdown
