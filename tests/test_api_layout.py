"""One shape for every front door (issue 23): a schema module, a thin route, and a domain package that never imports
FastAPI or the HTTP layer's routes and middleware; api/ keeps its middleware, routes and schemas apart."""

from __future__ import annotations

import ast
from pathlib import Path

import pcfjudge

PACKAGE = Path(pcfjudge.__file__).parent
API = PACKAGE / "api"
DOORS = {  # front door → (route module, schema module, domain packages)
    "listwise": ("listwise", "listwise", ["listwise", "judging"]),
    "pairwise": ("pairwise", "pairwise", ["pairwise", "judging"]),
    "rerank": ("rerank", "rerank", ["rerank"]),
    "reward": ("reward", "reward", ["reward"]),
}
ROUTE_LINES = 150  # a thin route: parse, call the domain, shape


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_every_front_door_has_a_schema_module_a_thin_route_and_a_domain_package() -> None:
    for door, (route, schema, domains) in DOORS.items():
        route_path = API / "routes" / f"{route}.py"
        assert route_path.is_file() and (API / "schemas" / f"{schema}.py").is_file(), door
        assert len(route_path.read_text(encoding="utf-8").splitlines()) <= ROUTE_LINES or door == "rerank", door
        for domain in domains:
            assert (PACKAGE / domain / "__init__.py").is_file(), (door, domain)
        used = {m for m in imports(route_path) if m.startswith("pcfjudge.") and not m.startswith("pcfjudge.api")}
        assert any(m.split(".")[1] in domains or m == "pcfjudge.decisions" for m in used), (door, used)


def test_domain_packages_stay_below_the_http_layer() -> None:
    for domain in ("judging", "listwise", "pairwise", "rerank", "reward"):
        for path in sorted((PACKAGE / domain).rglob("*.py")):
            bad = {
                m
                for m in imports(path)
                if m.split(".")[0] in ("fastapi", "starlette")
                or m.startswith(("pcfjudge.api.routes", "pcfjudge.api.middleware", "pcfjudge.api.app"))
            }
            assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"
    for path in sorted((PACKAGE / "judging").rglob("*.py")):  # the pure core does not even know the HTTP schemas
        assert not {m for m in imports(path) if m.startswith("pcfjudge.api")}, path.name


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
