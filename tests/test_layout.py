"""The package's shape holds: one judging path, a leaf module of shared types, backends that know nothing of judging.

Static checks over the source (ast), so a new front door that assembles runner, decoding parameters, deadline or
quorum itself fails here instead of drifting from the service's behaviour (the bench once forgot the quorum).
"""

from __future__ import annotations

import ast

from tests.helpers import ROOT

PACKAGE = ROOT / "app" / "pcfjudge"


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
