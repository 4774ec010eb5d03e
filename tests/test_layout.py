"""The package's shape holds: one judging path, a leaf module of shared types, backends that know nothing of judging,
and one shape for every front door (its schemas, a thin route, a domain package that never imports FastAPI).

Static checks over the source (ast), so a new front door that assembles runner, decoding parameters, deadline or
quorum itself fails here instead of drifting from the service's behaviour (the bench once forgot the quorum).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = ROOT / "app" / "pcfjudge"
API = PACKAGE / "api"


def _parse(source: str) -> ast.Module:
    """``ast.parse``, retried on SystemError: under CPython 3.11.7 this suite has seen a transient "SystemError: AST
    constructor recursion depth mismatch" from a parse of an unchanged file (most likely a race with a parse in
    another test's server thread, the converter's counter not being per thread); the same source parses on retry."""
    for _ in range(5):
        try:
            return ast.parse(source)
        except SystemError:
            continue
    return ast.parse(source)


def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(PACKAGE)): _parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")}


def _called(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


def _imports(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_only_the_judge_assembles_a_judgment() -> None:
    """judge_listwise/judge_pairwise and decoding parameters are used by Judge alone; Runner is built by Services."""
    owners = {"judge_listwise": {"judge.py"}, "judge_pairwise": {"judge.py"}, "decoding_params": {"judge.py"}}
    owners["Runner"] = {"services.py"}
    for name, allowed in owners.items():
        callers = {path for path, tree in _modules().items() if name in _called(tree)}
        assert callers == allowed, f"{name} is called from {sorted(callers - allowed)}; judge through Judge instead"


def test_types_is_a_leaf_and_backends_do_not_import_judging() -> None:
    modules = _modules()
    assert not [m for m in _imports(modules["types.py"]) if m.startswith("pcfjudge")]
    for path, tree in modules.items():
        if path.startswith(("backends/", "cache/")):
            assert not [m for m in _imports(tree) if m.startswith(("pcfjudge.judging", "pcfjudge.api"))], path


def test_max_k_is_defined_once() -> None:
    """MAX_K lives in pcfjudge.types; no module binds its own 64 for K or the sample stride."""
    for path, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and path != "types.py":
                targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
                assert not targets & {"MAX_K", "_MAX_K", "SAMPLE_STRIDE"}, path
            if isinstance(node, ast.keyword) and node.arg == "le" and isinstance(node.value, ast.Constant):
                assert node.value.value != 64, f"{path}: bound K with le=MAX_K"


def test_app_is_only_a_source_root() -> None:
    build_files = ("__pycache__", "pcfjudge.egg-info")  # left by `pip install -e .`, git-ignored
    assert sorted(p.name for p in (ROOT / "app").iterdir() if p.name not in build_files) == ["pcfjudge"]
    assert not (ROOT / "app" / "__init__.py").exists()


# ── one shape for every front door: a schema module, a thin route, a domain package below the HTTP layer ──────────

DOORS = {  # front door → (route module, schema module, domain packages)
    "listwise": ("listwise", "listwise", ["listwise", "judging"]),
    "pairwise": ("pairwise", "pairwise", ["pairwise", "judging"]),
    "rerank": ("rerank", "rerank", ["rerank"]),
    "reward": ("reward", "reward", ["reward"]),
}
ROUTE_LINES = 150  # a thin route: parse, call the domain, shape


def _file_imports(path: Path) -> set[str]:
    return _imports(_parse(path.read_text(encoding="utf-8")))


def test_every_front_door_has_a_schema_module_a_thin_route_and_a_domain_package() -> None:
    for door, (route, schema, domains) in DOORS.items():
        route_path = API / "routes" / f"{route}.py"
        assert route_path.is_file() and (API / "schemas" / f"{schema}.py").is_file(), door
        assert len(route_path.read_text(encoding="utf-8").splitlines()) <= ROUTE_LINES or door == "rerank", door
        for domain in domains:
            assert (PACKAGE / domain / "__init__.py").is_file(), (door, domain)
        used = {m for m in _file_imports(route_path) if m.startswith("pcfjudge.") and not m.startswith("pcfjudge.api")}
        assert any(m.split(".")[1] in domains or m == "pcfjudge.doors.decisions" for m in used), (door, used)


def test_domain_packages_stay_below_the_http_layer() -> None:
    for domain in ("judging", "listwise", "pairwise", "rerank", "reward"):
        for path in sorted((PACKAGE / domain).rglob("*.py")):
            bad = {
                m
                for m in _file_imports(path)
                if m.split(".")[0] in ("fastapi", "starlette")
                or m.startswith(("pcfjudge.api.routes", "pcfjudge.api.middleware", "pcfjudge.api.app"))
            }
            assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"
    for path in sorted((PACKAGE / "judging").rglob("*.py")):  # the pure core does not even know the HTTP schemas
        assert not {m for m in _file_imports(path) if m.startswith("pcfjudge.api")}, path.name


def test_api_keeps_middleware_routes_and_schemas_apart() -> None:
    top = sorted(p.name for p in API.glob("*.py"))
    assert top == ["__init__.py", "app.py", "deps.py", "errors.py", "examples.py"], top
    for path in (API / "middleware").glob("*.py"):
        assert "APIRouter" not in path.read_text(encoding="utf-8"), path.name  # ASGI layers, not routes
    for path in (API / "routes").glob("[!_]*.py"):
        assert "APIRouter" in path.read_text(encoding="utf-8"), path.name
    for path in (API / "schemas").glob("[!_]*.py"):
        text = path.read_text(encoding="utf-8")
        assert "BaseModel" in text and "APIRouter" not in text, path.name
