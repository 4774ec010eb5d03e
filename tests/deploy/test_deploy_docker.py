"""docker/: the compose file against the compose specification (Docker Compose v2's own validator), the Dockerfile's
base pin, user, healthcheck and command against the CLI and the k8s manifests, and a .dockerignore that sends the
builder only what the Dockerfile copies. No Docker engine runs here, so the image is not built; its command and
healthcheck are run for real against a local `pcfjudge serve` instead."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser
from pcfjudge.cli.main import build_parser
from pcfjudge.settings import Settings
from pcfjudge_lab.bench import burst_memory

from tests.support.basics import ROOT
from tests.support.manifests import K8S, compose_binary, render, settings_env_names
from tests.support.processes import background_process, clean_env
from tests.support.waits import free_port

COMPOSE = ROOT / "docker" / "compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
EXACT_TAG = re.compile(r"^[\w./-]+:v?\d+\.\d+\.\d+[\w.-]*(@sha256:[0-9a-f]{64})?$")


def compose_config(path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [str(compose_binary()), "-f", str(path), "config", "--format", "json"]
    return subprocess.run(argv, capture_output=True, text=True, env=clean_env(env), cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    done = compose_config(COMPOSE)
    assert done.returncode == 0, done.stderr
    model: dict[str, Any] = json.loads(done.stdout)
    return model


def test_compose_file_is_valid_against_the_compose_spec(compose: dict[str, Any]) -> None:
    assert {"redis", "pcfjudge-1", "pcfjudge-2", "prometheus", "grafana"} <= set(compose["services"])


def test_the_compose_validator_rejects_what_the_spec_does(tmp_path: Path) -> None:
    bad = tmp_path / "compose.yml"
    bad.write_text(COMPOSE.read_text().replace("    read_only: true\n", "    read_only: true\n    stop_grace: 40s\n"))
    done = compose_config(bad)
    assert done.returncode != 0 and "additional properties 'stop_grace' not allowed" in done.stderr


def test_compose_images_are_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert EXACT_TAG.match(service["image"]), f"{name}: {service['image']} is not an exact version"


def test_compose_replicas_read_real_settings_and_drain_before_sigkill(compose: dict[str, Any]) -> None:
    services = {k: v for k, v in compose["services"].items() if k.startswith("pcfjudge-")}
    assert len(services) == 2
    for service in services.values():
        env = {k: v for k, v in service["environment"].items() if v is not None}  # None: unset unless in the shell
        assert not set(env) - settings_env_names()
        settings = Settings(**{k.removeprefix("PCFJ_").lower(): v for k, v in env.items()})
        assert settings.resolved_default_model() == "sim:default"  # no empty key selects a provider
        assert (
            settings.cache.redis_url is not None
            and settings.cache.redis_url.split("//")[1].split(":")[0] in compose["services"]
        )
        grace = int(service["stop_grace_period"].removesuffix("s"))
        assert grace > settings.process.shutdown_grace_s and service["read_only"] is True


def dockerfile() -> DockerfileParser:
    return DockerfileParser(path=str(DOCKERFILE), env_replace=False)


def instructions(kind: str) -> list[str]:
    return [i["value"] for i in dockerfile().structure if i["instruction"] == kind]


def test_dockerfile_base_is_pinned_and_user_is_the_one_kubernetes_runs() -> None:
    parser = dockerfile()
    assert EXACT_TAG.match(parser.baseimage), parser.baseimage
    user = instructions("USER")[-1]
    uid, gid = (int(x) for x in user.split(":"))
    assert uid != 0 and gid != 0
    pod = next(d for d in render(K8S / "base") if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (uid, gid)


def cmd() -> list[str]:
    argv: list[str] = json.loads(instructions("CMD")[-1])
    return argv


def test_dockerfile_cmd_serves_on_the_exposed_port_with_workers_from_env() -> None:
    argv = cmd()
    args = build_parser().parse_args(argv[1:])
    assert argv[0] == "pcfjudge" and args.command == "serve"
    assert instructions("EXPOSE") == [str(args.port)]
    assert args.workers is None, "--workers would override PCFJ_WORKERS"
    env = dockerfile().envs
    assert {k for k in env if k.startswith("PCFJ_")} <= settings_env_names()
    assert int(env["PCFJ_WORKERS"]) >= 1


def healthcheck(port: int) -> list[str]:
    value = instructions("HEALTHCHECK")[-1]
    argv: list[str] = json.loads(value[value.index("CMD") + 3 :])
    assert argv[0] == "python" and f":{build_parser().parse_args(cmd()[1:]).port}/healthz" in argv[-1]
    return [sys.executable, *argv[1:-1], re.sub(r":\d+/", f":{port}/", argv[-1])]


def image_env() -> dict[str, str]:
    """The image's ENV for the service (``PCFJ_*`` and the allocator's), its jemalloc at this machine's path of
    Debian's libjemalloc2 (redis-server depends on it; the image links it to /usr/local/lib)."""
    env = {k: v for k, v in dockerfile().envs.items() if k.startswith("PCFJ_") or k in ALLOCATOR}
    assert env["PYTHONMALLOC"] == "malloc" and Path(env["LD_PRELOAD"]).name == JEMALLOC
    assert dict(burst_memory.JEMALLOC).items() <= env.items()  # what `bench safety --burst` measures "as the image"
    found = sorted(Path("/usr/lib").glob(f"*-linux-gnu/{JEMALLOC}"))
    assert found, f"{JEMALLOC} not found: apt-get install libjemalloc2 (scripts/test.sh installs redis-server with it)"
    return env | {"LD_PRELOAD": str(found[0])}


ALLOCATOR = {"LD_PRELOAD", "PYTHONMALLOC", "MALLOC_CONF"}
JEMALLOC = "libjemalloc.so.2"


@pytest.mark.slow
def test_image_command_and_healthcheck_work_for_real() -> None:
    """The CMD (bound to loopback) with the image's ENV: PCFJ_WORKERS=2 gives two workers, each allocating with
    jemalloc; the HEALTHCHECK passes against it and fails once it is gone."""
    port = free_port()
    argv = [sys.executable, "-m", "pcfjudge.cli.main", *cmd()[1:], "--host", "127.0.0.1", "--port", str(port)]
    env = image_env()
    url = f"http://127.0.0.1:{port}/healthz"
    with background_process(argv, ready_url=url, env=env, name="image CMD") as proc:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        workers = [c for c in children if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()]
        assert len(workers) == int(env["PCFJ_WORKERS"])
        assert all(JEMALLOC in Path(f"/proc/{w}/maps").read_text() for w in workers)
        assert subprocess.run(healthcheck(port), timeout=30).returncode == 0
    assert subprocess.run(healthcheck(port), capture_output=True, timeout=30).returncode != 0


PRUNED = {".git", ".venv", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"}


def excluded(rel: str) -> bool:
    """Whether `docker build .` leaves ``rel`` out, by .dockerignore's rules (the last matching pattern wins)."""
    patterns = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()]
    result = False
    for pattern in (p for p in patterns if p and not p.startswith("#")):
        negate, body = pattern.startswith("!"), pattern.removeprefix("!").rstrip("/")
        if _matches(rel, body):
            result = not negate
    return result


def context_files() -> set[str]:
    """The files `docker build .` would send (big local-state directories are not walked: see the test)."""
    sent = set()
    for directory, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in PRUNED]
        for name in files:
            rel = (Path(directory) / name).relative_to(ROOT).as_posix()
            if not excluded(rel):
                sent.add(rel)
    return sent


def _matches(rel: str, pattern: str) -> bool:
    if pattern.startswith("**/"):
        return any(fnmatch.fnmatch(part, pattern[3:]) for part in rel.split("/")) or fnmatch.fnmatch(rel, pattern)
    return fnmatch.fnmatch(rel, pattern) or rel.startswith(pattern + "/")


def test_dockerignore_sends_only_what_the_dockerfile_copies() -> None:
    sources = {s for copy in instructions("COPY") for s in copy.split()[:-1]}
    files = context_files()
    assert files, "nothing would be sent"
    outside = {f for f in files if not any(f == s or f.startswith(s.rstrip("/") + "/") for s in sources)}
    assert not outside, f"sent to the builder but never copied: {sorted(outside)[:10]}"
    assert {"pyproject.toml", "README.md", "app/pcfjudge/cli/main.py"} <= files
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    assert all(excluded(f"{d}/x/y.py") for d in PRUNED), "local state would reach the builder"
