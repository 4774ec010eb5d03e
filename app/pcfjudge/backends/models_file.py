"""``PCFJ_MODELS_FILE``: judge fleets (one model served by several endpoints) in LiteLLM's ``model_list`` format.

A LiteLLM proxy's ``config.yaml`` carries over as it is (its other sections are ignored)::

    model_list:
      - model_name: qwen-judge              # requests name it as fleet:qwen-judge
        litellm_params:
          model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct   # wire/model sent: openai, hosted_vllm, vllm → Chat Completions
          api_base: http://vllm-0:8000/v1               #                  anthropic → Messages
          api_key: os.environ/VLLM_KEY       # optional; os.environ/NAME reads the variable NAME, as LiteLLM does
          rpm: 600                           # optional: requests per minute, tokens per minute and calls at once
          tpm: 200000                        #   this endpoint takes (shared by every replica with PCFJ_REDIS_URL)
          max_parallel_requests: 32
        model_info:
          id: vllm-0                         # optional: the endpoint's name in metrics and /readyz

Every entry is one endpoint; entries with the same ``model_name`` are one fleet. YAML (``.yaml``/``.yml``) or JSON
(anything else). Errors name the entry and the fix; keys are read here and never shown again.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml as pyyaml

Wire = Literal["openai", "anthropic"]
WIRES: dict[str, Wire] = {"openai": "openai", "hosted_vllm": "openai", "vllm": "openai", "anthropic": "anthropic"}
ENV_PREFIX = "os.environ/"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


class ModelsFileError(ValueError):
    """The models file cannot be used; the message names the entry and the fix."""


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    """One deployment of a fleet's model: where it is, what it is called there, and what it may take."""

    id: str
    wire: Wire
    model: str  # the model name sent to the endpoint (without the wire prefix)
    api_base: str | None
    api_key: str | None = field(default=None, repr=False)  # never shown: not in repr, logs, errors or metrics
    rpm: int | None = None
    tpm: int | None = None
    max_parallel_requests: int | None = None

    @property
    def limited(self) -> bool:
        return bool(self.rpm or self.tpm or self.max_parallel_requests)


@dataclass(frozen=True, slots=True)
class FleetSpec:
    name: str  # the model_name
    endpoints: tuple[EndpointSpec, ...]


def load_models_file(path: Path, environ: dict[str, str] | None = None) -> dict[str, FleetSpec]:
    """The fleets of ``path`` by model name, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelsFileError(f"PCFJ_MODELS_FILE: cannot read {path} ({exc.strerror})") from None
    return parse_models(text, yaml=path.suffix.lower() in (".yaml", ".yml"), environ=environ)


def parse_models(text: str, *, yaml: bool, environ: dict[str, str] | None = None) -> dict[str, FleetSpec]:
    data = _load(text, yaml)
    entries = data.get("model_list") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ModelsFileError("PCFJ_MODELS_FILE: needs a non-empty `model_list` (LiteLLM's format)")
    env = os.environ if environ is None else environ
    grouped: dict[str, list[EndpointSpec]] = {}
    ids: set[str] = set()
    for n, entry in enumerate(entries):
        spec = _endpoint(n, entry, env, grouped)
        if spec.id in ids:
            raise ModelsFileError(f"PCFJ_MODELS_FILE: model_list[{n}]: model_info.id {spec.id!r} is used twice")
        ids.add(spec.id)
    return {name: FleetSpec(name, tuple(endpoints)) for name, endpoints in grouped.items()}


def _load(text: str, yaml: bool) -> Any:
    if not yaml:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ModelsFileError(f"PCFJ_MODELS_FILE: not valid JSON ({exc})") from None

    try:
        return pyyaml.safe_load(text)
    except pyyaml.YAMLError as exc:
        raise ModelsFileError(f"PCFJ_MODELS_FILE: not valid YAML ({type(exc).__name__})") from None


def _endpoint(n: int, entry: object, env: Any, grouped: dict[str, list[EndpointSpec]]) -> EndpointSpec:
    where = f"PCFJ_MODELS_FILE: model_list[{n}]"
    if not isinstance(entry, dict):
        raise ModelsFileError(f"{where}: each entry is a mapping with model_name and litellm_params")
    name, params, info = entry.get("model_name"), entry.get("litellm_params"), entry.get("model_info") or {}
    if (
        not isinstance(name, str)
        or not name
        or "," in name
        or not isinstance(params, dict)
        or not isinstance(info, dict)
    ):
        raise ModelsFileError(f"{where}: needs a model_name (no commas) and a litellm_params mapping")
    model = params.get("model")
    if not isinstance(model, str) or not model:
        raise ModelsFileError(f"{where}: litellm_params.model is missing (e.g. hosted_vllm/Qwen2.5-7B-Instruct)")
    prefix, sep, rest = model.partition("/")
    wire = WIRES.get(prefix) if sep else "openai"
    if wire is None:
        known = ", ".join(f"{w}/" for w in WIRES)
        raise ModelsFileError(f"{where}: model prefix {prefix!r}/ is not served here; use one of {known}")
    base = params.get("api_base")
    if base is not None and (not isinstance(base, str) or not base.startswith(("http://", "https://"))):
        raise ModelsFileError(f"{where}: api_base must be an http(s) URL")
    if base is not None and _link_local(base):
        detail = "api_base is a link-local address (169.254.0.0/16, fe80::/10: cloud metadata services live there)"
        raise ModelsFileError(f"{where}: {detail}; name the judge's own host")
    endpoints = grouped.setdefault(name, [])
    ident = info.get("id", f"{name}-{len(endpoints)}")
    if not isinstance(ident, str) or not _ID.fullmatch(ident):
        raise ModelsFileError(f"{where}: model_info.id must be a short name (letters, digits, . _ -)")
    spec = EndpointSpec(
        id=ident,
        wire=wire,
        model=rest if sep else model,
        api_base=base,
        api_key=_key(where, params.get("api_key"), env),
        rpm=_count(where, params, "rpm"),
        tpm=_count(where, params, "tpm"),
        max_parallel_requests=_count(where, params, "max_parallel_requests"),
    )
    endpoints.append(spec)
    return spec


def _key(where: str, value: object, env: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ModelsFileError(f"{where}: api_key must be a string (or os.environ/NAME)")
    if value.startswith(ENV_PREFIX):
        variable = value.removeprefix(ENV_PREFIX)
        found = env.get(variable)
        if not found:
            raise ModelsFileError(f"{where}: api_key names the environment variable {variable}, which is not set")
        return str(found)
    return value


def _count(where: str, params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        raise ModelsFileError(f"{where}: litellm_params.{name} must be a positive number")
    return int(value)


def _link_local(url: str) -> bool:
    """Whether ``url``'s host is a literal link-local address (IPv4 169.254.0.0/16, IPv6 fe80::/10, or such an IPv4
    inside IPv6). A host name is not resolved here: that is the network's policy to enforce."""
    try:
        host = urlsplit(url).hostname
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return False
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return address.is_link_local or (mapped is not None and mapped.is_link_local)
