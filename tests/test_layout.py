"""The package's shape holds: layers that only point down, no import cycle, one judging path, one name per thing,
one shape for every front door, a server that imports none of the lab, and a lab (``lab/pcfjudge_lab``, a
distribution of its own) that reaches the service only through ``pcfjudge.surface`` and the top-level package.

``LAYERS`` is where the layers are written down (docs/development.md draws them). The import graph is read from the
source (ast): every ``import`` and ``from … import`` anywhere in a module, inside functions and ``if TYPE_CHECKING:``
blocks included, relative imports resolved. ``python -m tests.test_layout`` prints the layers, the upward imports and
cycles it finds, and the modules at the package root.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from pcfjudge.doors.door_list import DOORS as DOOR_LIST

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
SOURCE = ROOT / "app"
PACKAGE = SOURCE / "pcfjudge"

LAYERS: list[tuple[str, tuple[str, ...]]] = [  # bottom first; a module may import its own layer and those below
    ("base", ("_version", "at_rest", "types", "context", "errors", "jsonl", "kept", "settings", "telemetry")),
    ("contract", ("schemas",)),  # the wire contract: every front door's request and response models
    ("core", ("judging",)),  # pure: permutations, consensus, prompts, parsing, adaptive K
    ("infra", ("backends", "cache")),
    ("engine", ("engine", "security", "reward")),  # Judge, runner, runs and passes; guards; reward groups
    ("wiring", ("services",)),
    ("http", ("http",)),  # what every door's routes share at the HTTP edge: deps, the error table, streams, loopback
    ("doors", ("doors",)),  # one folder per front door: wire models, plan builder, response, routes
    ("surfaces", ("api", "client", "integrations", "batch")),
    ("tools", ("surface",)),  # the in-process API for tools: the lab (pcfjudge_lab) imports the service only through it
    ("entry", ("", "_moved", "cli")),  # "": the package itself (its public surface); the pcfjudge command
]
LAB = "pcfjudge_lab"  # eval, bench, calibrate, the fake provider: lab/pcfjudge_lab, measures the service from outside
LAB_PACKAGE = ROOT / "lab" / LAB
LAB_DOORS = {"pcfjudge", "pcfjudge.surface"}  # what the lab may import of the service
LAB_DELEGATION = "cli/main.py"  # the one module of the service that imports the lab: lazily, to add its commands
ROOT_MODULES = {
    "__init__",
    "at_rest",
    "_version",
    "context",
    "errors",
    "jsonl",
    "kept",
    "services",
    "settings",
    "surface",
    "types",
}

Graph = dict[str, set[str]]


# ── the import graph ───────────────────────────────────────────────────────────────────────────────────────────


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


def modules(source: Path = SOURCE) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package) for every module under ``source``/pcfjudge."""
    out = {}
    for path in sorted((source / "pcfjudge").rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def _target(name: str, known: Mapping[str, object]) -> str | None:
    """The module an imported name lives in: itself, or its nearest enclosing module of ours."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(source: Path = SOURCE) -> Graph:
    """Module → the modules of ours it imports (anywhere in it, TYPE_CHECKING and function-level imports too)."""
    known = modules(source)
    edges: Graph = {name: set() for name in known}
    for name, (path, package) in known.items():
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, *([node.module] if node.module else [])])
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for imported in targets:
                target = _target(imported, known) if imported.startswith("pcfjudge") else None
                if target is not None and target != name:
                    edges[name].add(target)
    return edges


def layer_of(module: str) -> int | None:
    """The index in ``LAYERS`` of the longest prefix naming ``module`` (None: no layer says where it belongs)."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            full = f"pcfjudge.{prefix}" if prefix else "pcfjudge"
            named = module == full or (prefix and module.startswith(full + "."))
            if named and (best is None or len(full) > best[1]):
                best = (index, len(full))
    return best[0] if best else None


def upward(edges: Graph) -> list[tuple[str, str]]:
    """Imports of a module from a higher layer than its own."""
    found = []
    for module, targets in sorted(edges.items()):
        own = layer_of(module)
        for target in sorted(targets):
            above = layer_of(target)
            if own is not None and above is not None and above > own:
                found.append((module, target))
    return found


def cycles(edges: Graph) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a loop (strongly connected, size > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _reach(edges: Graph, start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


# ── the layers ─────────────────────────────────────────────────────────────────────────────────────────────────


def test_every_module_has_a_layer() -> None:
    homeless = sorted(m for m in modules() if layer_of(m) is None)
    assert not homeless, (
        f"add these to LAYERS (tests/test_layout.py) and the diagram in docs/development.md: {homeless}"
    )


def test_no_module_imports_a_higher_layer() -> None:
    found = upward(graph())
    assert not found, "imports that point up the layers:\n" + "\n".join(f"  {a} -> {b}" for a, b in found)


def test_no_import_cycle_type_checking_imports_included() -> None:
    found = cycles(graph())
    assert not found, f"import cycles: {found}"


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    """The graph, the layers and the cycle finder on a small package made for the purpose."""
    files = {
        "__init__.py": "",
        "types.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pcfjudge.engine import runner\n",
        "engine/__init__.py": "",
        "engine/runner.py": "def later():\n    from ..api import app\n",
        "api/__init__.py": "",
        "api/app.py": "from pcfjudge.engine.runner import later\nimport pcfjudge.types\n",
    }
    for name, text in files.items():
        (tmp_path / "pcfjudge" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pcfjudge" / name).write_text(text, encoding="utf-8")
    edges = graph(tmp_path)
    assert edges["pcfjudge.types"] == {"pcfjudge.engine.runner"}  # a TYPE_CHECKING import counts
    assert edges["pcfjudge.engine.runner"] == {"pcfjudge.api.app"}  # so does a relative one inside a function
    assert upward(edges) == [
        ("pcfjudge.engine.runner", "pcfjudge.api.app"),
        ("pcfjudge.types", "pcfjudge.engine.runner"),
    ]
    assert cycles(edges) == [["pcfjudge.api.app", "pcfjudge.engine.runner", "pcfjudge.types"]]


def test_the_server_imports_none_of_the_lab() -> None:
    """``pcfjudge serve`` (the command, its app factory, the HTTP protocol class, the lifespan): no module of
    ``pcfjudge_lab`` is imported. Checked in a fresh interpreter, uvicorn.run replaced by a recorder."""
    script = textwrap.dedent(
        """
        import asyncio, importlib, json, sys
        import uvicorn
        seen = {}
        uvicorn.run = lambda app, **kw: seen.update(kw, app=app)
        from pcfjudge.cli.main import main
        main(["serve", "--port", "0"])
        for target in (seen["app"], seen["http"]):
            module, _, name = target.partition(":")
            factory = getattr(importlib.import_module(module), name)
        app = getattr(importlib.import_module(seen["app"].partition(":")[0]), "create_app")()

        async def lifespan():
            async with app.router.lifespan_context(app):
                pass

        asyncio.run(lifespan())
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("pcfjudge"))))  # pcfjudge_lab too
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(__import__("json").loads(out.stdout.strip().splitlines()[-1]))
    assert "pcfjudge.api.app" in loaded and "pcfjudge.services" in loaded  # it did start the server
    assert not {m for m in loaded if m.startswith(LAB)}, sorted(m for m in loaded if m.startswith(LAB))
    assert "pcfjudge.surface" not in _reach(graph(), "pcfjudge.api.app")


def _lab_imports(tree: ast.Module) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == LAB) or (
            isinstance(node, ast.Import) and any(alias.name.split(".")[0] == LAB for alias in node.names)
        ):
            found.append(node)
    return found


def test_the_service_imports_the_lab_only_to_delegate_its_commands() -> None:
    """No module of ``app/pcfjudge`` imports ``pcfjudge_lab``, but the CLI, inside a function (lazily, when the lab's
    command is asked for and the lab is installed); only ``_moved`` (the lab's old names) names its modules besides."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = _parse(path.read_text(encoding="utf-8"))
        found = _lab_imports(tree)
        if rel != LAB_DELEGATION:
            assert not found, f"{rel} imports the lab (only {LAB_DELEGATION} may, lazily)"
            named = [
                node.value
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and (node.value == LAB or node.value.startswith(LAB + "."))
            ]  # a module name in a string (importlib, -m): only _moved's table of the lab's old names
            assert not named or rel == "_moved/table.py", f"{rel} names the lab's modules: {named}"
            continue
        assert found, f"{rel} no longer delegates to the lab; update LAB_DELEGATION"
        top_level = {id(node) for node in tree.body}
        assert not [node for node in found if id(node) in top_level], f"{rel} imports the lab at module level"


def test_the_lab_imports_the_service_only_through_the_surface() -> None:
    """Every import of ``pcfjudge`` anywhere in ``lab/pcfjudge_lab`` (functions and TYPE_CHECKING blocks included) is
    of ``pcfjudge.surface`` or of a public name of the top-level package."""
    import pcfjudge

    assert LAB_PACKAGE.is_dir()
    bad = []
    for path in sorted(LAB_PACKAGE.rglob("*.py")):
        rel = path.relative_to(LAB_PACKAGE.parent).as_posix()
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "pcfjudge":
                if node.module not in LAB_DOORS:
                    bad.append(f"{rel}:{node.lineno} from {node.module} import …")
                elif node.module == "pcfjudge":
                    bad += [
                        f"{rel}:{node.lineno} pcfjudge.{a.name}" for a in node.names if a.name not in pcfjudge.__all__
                    ]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.split(".")[0] == "pcfjudge" and a.name not in LAB_DOORS]
                bad += [f"{rel}:{node.lineno} import {name}" for name in names]
    assert not bad, "the lab reaches past pcfjudge.surface (re-export the name there):\n" + "\n".join(bad)


def test_the_surface_is_what_it_lists_and_the_lab_uses_all_of_it() -> None:
    """``pcfjudge.surface.__all__`` is the names it loads (its table) and the names mypy sees (its TYPE_CHECKING
    imports), each resolves, and each is used by the lab: a name no tool imports any more leaves the surface."""
    import pcfjudge.surface as surface

    own = {
        name
        for name, value in vars(surface).items()
        if callable(value) and getattr(value, "__module__", "") == surface.__name__
    }
    own.discard("__getattr__")
    assert sorted(surface.__all__) == sorted({*surface._LAZY, *surface._SUBMODULES, *own})
    tree = _parse((PACKAGE / "surface.py").read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    typed = {
        a.asname or a.name.rpartition(".")[2] for n in guarded.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert set(surface.__all__) - own == typed - {"ListwiseRequest", "ListwiseResponse"}  # those two: pcfjudge's own
    for name in surface.__all__:
        assert getattr(surface, name) is not None, name
    used = set()
    for path in LAB_PACKAGE.rglob("*.py"):
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "pcfjudge.surface":
                used.update(a.name for a in node.names)
    assert set(surface.__all__) - used == set(), "surface names no tool uses (remove them)"


def test_importing_the_surface_loads_nothing_of_the_service() -> None:
    script = "import sys, pcfjudge.surface\nprint(sorted(m for m in sys.modules if m.startswith('pcfjudge')))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == (
        "['pcfjudge', 'pcfjudge._moved', 'pcfjudge._moved.table', 'pcfjudge._version', 'pcfjudge.surface']"
    )


def test_the_docs_draw_every_layer() -> None:
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    block = text.split("```mermaid", 1)[1].split("```", 1)[0]
    for name, _ in LAYERS:
        assert f"<b>{name}</b>" in block, f"docs/development.md's layer diagram lacks {name!r}"


# ── imports at the top ─────────────────────────────────────────────────────────────────────────────────────────

IMPORT_NAMES = {  # required distributions whose import name is not their normalised name
    "pyyaml": "yaml",
    "python_json_logger": "pythonjsonlogger",
    "opentelemetry_api": "opentelemetry",
    "opentelemetry_sdk": "opentelemetry",
    "opentelemetry_exporter_otlp_proto_http": "opentelemetry",
}
CLI = ("cli/", "batch/batch_command.py")  # may import a subcommand's module (pcfjudge.…, pcfjudge_lab.…) when it runs
MAX_CYCLES = 5  # imports kept in a function to break an import cycle, each saying so ("# cycle: …")
ON_FIRST_USE = {  # module → what it imports in a function though required, and the test that holds it to that
    # no OpenTelemetry SDK while tracing is off (tests/telemetry/test_tracing.py, test_off_there_is_no_header_…)
    # the Anthropic SDK with the first Anthropic backend (tests/backends/test_backends_anthropic.py, test_the_sdk_loads_…)
    "backends/factory.py": ("pcfjudge.backends.anthropic_backend",),
    "telemetry/tracing.py": ("opentelemetry.sdk", "pcfjudge.telemetry.loop_export", "pcfjudge.telemetry.otlp"),
    "api/middleware/request.py": ("pcfjudge.telemetry.spans",),
    "engine/runner.py": ("pcfjudge.telemetry.spans",),
    "engine/judge.py": ("pcfjudge.engine.judgment_spans",),
    # pcfjudge.client.http alone loads no pydantic (tests/integrations/test_integrations_import_light.py)
    "client/__init__.py": ("pcfjudge.client.typed", "pcfjudge.client.events"),
    # import pcfjudge.surface loads nothing of the service (test_importing_the_surface_loads_nothing_of_the_service)
    "surface.py": ("pcfjudge.doors.listwise.listwise_plan", "pcfjudge.doors.listwise.listwise_response"),
}


def required_imports() -> set[str]:
    """The top-level module names of ``[project] dependencies`` (pyproject.toml) and of the standard library."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        specs = tomllib.load(file)["project"]["dependencies"]
    names = set()
    for spec in specs:
        found = re.match(r"[A-Za-z0-9._-]+", spec)
        assert found, spec
        name = re.sub(r"[-.]+", "_", found.group(0)).lower()  # pydantic-settings → pydantic_settings
        names.add(IMPORT_NAMES.get(name, name))
    return names | set(sys.stdlib_module_names)


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import names (``from a import b``: a, and a.b in case b is a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = "pcfjudge" if node.level else (node.module or "")  # (relative: one of ours)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def test_imports_sit_at_the_top() -> None:
    """Imports at the top of a module show what it depends on (the style rule): inside a function only an optional
    package (not in ``[project] dependencies``), a CLI subcommand's module, an import marked ``# cycle:`` (a few),
    or what ``ON_FIRST_USE`` lists, each held to that by a test."""
    required = required_imports() | {"pcfjudge"}
    bad, cycles, used = [], [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = _parse(text)
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found = {id(n): n for f in functions for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
        for node in sorted(found.values(), key=lambda n: n.lineno):
            names = _imported(node)
            top = names[0].split(".")[0]
            where = f"{rel}:{node.lineno} {ast.unparse(node)}"
            if top not in required:
                continue  # an optional package
            if rel.startswith(CLI) and top in ("pcfjudge", LAB):
                continue  # a subcommand's module, loaded when that command runs
            if any("# cycle:" in line for line in lines[node.lineno - 1 : node.end_lineno]):
                cycles.append(where)
                continue
            allowed = ON_FIRST_USE.get(rel, ())
            hits = {a for a in allowed for name in names if name == a or name.startswith(a + ".")}
            if hits:
                used.update((rel, a) for a in hits)
                continue
            bad.append(where)
    assert not bad, "imports inside a function (move them to the top of the module):\n" + "\n".join(bad)
    assert len(cycles) <= MAX_CYCLES, "imports kept in a function for a cycle (break some):\n" + "\n".join(cycles)
    stale = sorted({(rel, a) for rel, allowed in ON_FIRST_USE.items() for a in allowed} - used)
    assert not stale, f"ON_FIRST_USE names imports no longer made inside a function: {stale}"


# ── names ──────────────────────────────────────────────────────────────────────────────────────────────────────


def test_one_name_per_thing() -> None:
    """No two modules of the service share a file name (a traceback or a search names one thing)."""
    names: dict[str, list[str]] = {}
    for module, (path, package) in modules().items():
        if not package:
            names.setdefault(path.name, []).append(module)
    assert not {name: where for name, where in names.items() if len(where) > 1}


def test_the_root_holds_a_handful_of_modules() -> None:
    assert {p.stem for p in PACKAGE.glob("*.py")} == ROOT_MODULES


def test_moved_names_still_import_with_a_deprecation_warning() -> None:
    script = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("error", DeprecationWarning)
        try:
            from pcfjudge.judge import Judge
        except DeprecationWarning as exc:
            print("warned:", exc)
        warnings.simplefilter("ignore", DeprecationWarning)
        from pcfjudge.judge import Judge
        from pcfjudge.engine.judge import Judge as Now
        from pcfjudge.api.schemas.listwise import ListwiseRequest
        from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest as Request
        from pcfjudge.eval.harness import Collector
        import pcfjudge
        assert pcfjudge.ListwiseRequest is Request and pcfjudge.Client.__name__ == "Client"
        print(Judge is Now, ListwiseRequest is Request, Collector.__module__)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    warned, same = out.stdout.strip().splitlines()
    assert (
        warned
        == "warned: pcfjudge.judge moved to pcfjudge.engine.judge; import it from there (the old name goes in the next release)"
    )
    assert same == "True True pcfjudge_lab.eval.harness"


# ── one judging path ───────────────────────────────────────────────────────────────────────────────────────────


def _trees() -> dict[str, ast.Module]:
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
    """judge_listwise/judge_pairwise are run by the Judge's strategies alone (engine/strategies.py), decoding
    parameters are chosen by Judge alone; Runner is built by Services."""
    owners = {n: {"engine/strategies.py"} for n in ("judge_listwise", "judge_pairwise", "judge_chat")}
    owners["decoding_params"] = {"engine/judge.py"}
    owners["Runner"] = {"services.py"}
    trees = _trees()
    for name, allowed in owners.items():
        callers = {path for path, tree in trees.items() if name in _called(tree)}
        assert callers == allowed, f"{name} is called from {sorted(callers - allowed)}; judge through Judge instead"


def test_types_is_a_leaf_and_backends_do_not_import_judging() -> None:
    trees = _trees()
    assert not [m for m in _imports(trees["types.py"]) if m.startswith("pcfjudge")]
    for path, tree in trees.items():
        if path.startswith(("backends/", "cache/")):
            assert not [m for m in _imports(tree) if m.startswith(("pcfjudge.judging", "pcfjudge.engine"))], path


def test_max_k_is_defined_once() -> None:
    """MAX_K lives in pcfjudge.types; no module binds its own 64 for K or the sample stride."""
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and path != "types.py":
                targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
                assert not targets & {"MAX_K", "_MAX_K", "SAMPLE_STRIDE"}, path
            if isinstance(node, ast.keyword) and node.arg == "le" and isinstance(node.value, ast.Constant):
                assert node.value.value != 64, f"{path}: bound K with le=MAX_K"


def test_app_is_only_a_source_root() -> None:
    build_files = ("__pycache__", "pcfjudge.egg-info")  # left by `pip install -e .`, git-ignored
    assert sorted(p.name for p in SOURCE.iterdir() if p.name not in build_files) == ["pcfjudge"]
    assert not (SOURCE / "__init__.py").exists()


# ── one shape for every front door: its contract, a thin route, its door logic below the HTTP layer ─────────────

API = PACKAGE / "api"
DOORS = tuple(door.name for door in DOOR_LIST)  # each one folder: pcfjudge/doors/<door>/
ROUTE_LINES = 150  # a thin route: parse, build the plan, run it, shape


def test_every_front_door_is_one_folder_with_its_wire_models_plan_builder_and_routes() -> None:
    """pcfjudge/doors/<door>/: <door>_protocol.py (the wire models), <door>_plan.py (wire request → checked plan),
    <door>_routes.py (thin routes that build the plan, run it and shape the answer); nothing of a door elsewhere."""
    for door in DOORS:
        folder = PACKAGE / "doors" / door
        protocol, plan, route = (folder / f"{door}_{part}.py" for part in ("protocol", "plan", "routes"))
        assert protocol.is_file() and plan.is_file() and route.is_file(), door
        assert len(route.read_text(encoding="utf-8").splitlines()) <= ROUTE_LINES or door == "rerank", door
        text = protocol.read_text(encoding="utf-8")
        assert "BaseModel" in text and "APIRouter" not in text, protocol.name
        used = _imports(_parse(route.read_text(encoding="utf-8")))
        assert f"pcfjudge.doors.{door}.{door}_plan" in used, (door, sorted(used))
        elsewhere = [p for p in PACKAGE.rglob(f"{door}_*.py") if folder not in p.parents]
        assert not [p for p in elsewhere if p.stem.endswith(("_protocol", "_schema", "_routes", "_task"))], elsewhere


CLIENTS = ("client", "integrations", "cli")  # HTTP clients of the service: they call the doors by their paths
ELSEWHERE = {  # a door's path or name where it is not that door, and why
    "batch/providers.py": "/v1/chat/completions is also OpenAI's own Batch API endpoint",
}


def test_no_door_name_or_path_outside_its_folder_and_the_door_list() -> None:
    """A door's route paths, and its name where that is not also a judgment kind (listwise, pairwise, chat: the
    engine's kinds of call), appear as text only in its folder and the door list: everything else reads the list."""
    from typing import get_args

    from pcfjudge.types import CallKind

    words = {path: door.name for door in DOOR_LIST for route in door.routes() for path in [route.path]}
    words |= {door.name: door.name for door in DOOR_LIST if door.name not in get_args(CallKind)}
    assert {"/v2/rerank", "/judge/listwise", "rerank", "reward"} <= set(words), words
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.split("/")[0] in CLIENTS or rel == "doors/door_list.py" or rel in ELSEWHERE:
            continue
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
            if text in words and not rel.startswith(f"doors/{words[text]}/"):
                found.append(f"{rel}:{getattr(node, 'lineno', '?')}: {text!r}")
    assert not found, found


def test_below_the_http_layer_nothing_knows_fastapi() -> None:
    """Only the HTTP edge (pcfjudge.http, the api package, each door's routes) knows FastAPI and Starlette."""
    for package in ("schemas", "judging", "engine", "doors", "reward", "backends", "cache", "security", "client"):
        for path in sorted((PACKAGE / package).rglob("*.py")):
            if path.stem.endswith("_routes"):
                continue
            bad = {
                m
                for m in _imports(_parse(path.read_text(encoding="utf-8")))
                if m.split(".")[0] in ("fastapi", "starlette")
            }
            assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"


def test_api_keeps_middleware_routes_and_handlers_apart() -> None:
    top = sorted(p.name for p in API.glob("*.py"))
    assert top == ["__init__.py", "app.py", "examples.py", "header_timeout.py"], top
    for path in (API / "middleware").glob("*.py"):
        assert "APIRouter" not in path.read_text(encoding="utf-8"), path.name  # ASGI layers, not routes
    for path in (API / "routes").glob("[!_]*.py"):
        assert "APIRouter" in path.read_text(encoding="utf-8"), path.name
    for path in (PACKAGE / "schemas").glob("[!_]*.py"):  # the models the doors share (errors, jobs)
        text = path.read_text(encoding="utf-8")
        assert "BaseModel" in text and "APIRouter" not in text, path.name


# ── the tests mirror the package ───────────────────────────────────────────────────────────────────────────────

TESTS = ROOT / "tests"
TESTS_OF_NO_PACKAGE = {  # folders of tests/ that name no folder of the package, and why
    "support": "helpers the tests share",
    "fixtures": "data files",
    "docs": "the documentation's pages and examples",
    "deploy": "docker, kubernetes, alert rules, packaging",
    "e2e": "whole requests against a real server and provider",
    "api/playground": "the page (pcfjudge/static) and its route (api/routes/playground_routes.py)",
    "backends/engines": "real llama.cpp engines behind pcfjudge.backends",
}


def test_the_tests_mirror_the_package_folders() -> None:
    """Every folder of tests/ names a folder of ``app/pcfjudge`` (``tests/lab/…``: of ``lab/pcfjudge_lab``) or is one
    of ``TESTS_OF_NO_PACKAGE``, and is a package (``__init__.py``); each front door ``pcfjudge/doors/<door>/`` has its
    tests in ``tests/doors/<door>/``."""
    stray, bare = [], []
    for folder in sorted(p for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        rel = folder.relative_to(TESTS).as_posix()
        if any(rel == name or rel.startswith(name + "/") for name in TESTS_OF_NO_PACKAGE):
            continue
        if not (folder / "__init__.py").is_file():
            bare.append(rel)
        lab, _, inner = rel.partition("/")
        mirrored = LAB_PACKAGE / inner if lab == "lab" else PACKAGE / rel
        if not mirrored.is_dir():
            stray.append(rel)
    assert not stray, (
        f"tests/ folders that name no folder of the package (move them, or add to TESTS_OF_NO_PACKAGE): {stray}"
    )
    assert not bare, f"tests/ folders without __init__.py: {bare}"
    assert sorted(p.name for p in (PACKAGE / "doors").iterdir() if (p / "__init__.py").is_file()) == sorted(DOORS)
    for door in DOORS:
        assert list((TESTS / "doors" / door).glob("test_*.py")), f"tests/doors/{door}/ holds no tests of its door"


# ── the counts, for a person ───────────────────────────────────────────────────────────────────────────────────


def report(edges: Graph, source: Path = SOURCE) -> Iterable[str]:
    yield "layers (bottom first):"
    for name, prefixes in LAYERS:
        yield f"  {name:9s} " + ", ".join(f"pcfjudge.{p}" if p else "pcfjudge" for p in prefixes)
    found = upward(edges)
    yield f"upward imports: {len(found)}"
    yield from (f"  {a} -> {b}" for a, b in found)
    loops = cycles(edges)
    yield f"import cycles: {len(loops)}"
    yield from (f"  {' <-> '.join(loop)}" for loop in loops)
    root = sorted(p.stem for p in (source / "pcfjudge").glob("*.py"))
    yield f"modules: {len(edges)}; at the package root ({len(root)}): {', '.join(root)}"


if __name__ == "__main__":
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE  # another checkout's app/, e.g. an older commit's
    print("\n".join(report(graph(source), source)))


def _http_edge(path: Path) -> bool:
    """The HTTP layer: pcfjudge.http, the api package, and each door's routes."""
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] in ("http", "api") or path.stem.endswith("_routes")


def test_below_the_http_layer_errors_carry_kinds_and_one_table_gives_statuses() -> None:
    """Below the HTTP layer ``Refusal`` and ``ApiError`` carry an error kind, never a status (only the HTTP edge may
    give an ``ApiError`` a status of its own); every kind raised anywhere has its status in ``STATUS``."""
    from pcfjudge.http.error_handlers import STATUS

    kinds: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in ("Refusal", "ApiError") or not node.args:
                continue
            where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
            first = node.args[0]
            assert not (isinstance(first, ast.Constant) and isinstance(first.value, int)), f"{where}: a status"
            if any(k.arg == "status" for k in node.keywords):
                assert _http_edge(path), f"{where}: a status below the HTTP layer"
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                kinds[first.value] = where
    assert kinds, "no Refusal or ApiError found: the scan is broken"
    assert not {kind: where for kind, where in kinds.items() if kind not in STATUS}


def test_below_the_http_layer_code_raises_kinds_and_never_chooses_a_status() -> None:
    """A refusal is raised as its reason (``errors.OverLimit``, ``QuotaExceeded``, …), never as a bare ``Refusal``;
    no class, call or field below the HTTP edge sets a ``status``; the engine, the guards, reward groups and the
    judging core hold no HTTP status literal (a backend may read its provider's); and every kind they raise has its
    status in the one table (``http.error_handlers.STATUS``)."""
    from typing import get_args

    from pcfjudge import errors
    from pcfjudge.http.error_handlers import STATUS
    from pcfjudge.types import Failure

    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if _http_edge(path) or rel == "errors.py":
            continue
        statusless = rel.split("/")[0] in ("engine", "reward", "security", "judging")
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            where = f"{rel}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Refusal":
                bad.append(f"{where}: a bare Refusal (raise its reason: errors.OverLimit, QuotaExceeded, …)")
            elif isinstance(node, ast.keyword) and node.arg == "status" and _is_status(node.value):
                bad.append(f"{where}: status= (give a kind; the HTTP edge's table gives the status)")
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and _is_status(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", "") for t in targets]
                if "status" in names:
                    bad.append(f"{where}: a status set below the HTTP edge")
            elif statusless and isinstance(node, ast.Constant) and type(node.value) is int and 400 <= node.value < 600:
                bad.append(f"{where}: the HTTP status {node.value}")
    assert not bad, "\n".join(bad)
    reasons = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.Refusal)]
    assert len(reasons) > 5 and all(c.kind in STATUS for c in reasons if c is not errors.Refusal)
    assert all(kind in STATUS for kind in get_args(Failure))


def _is_status(value: ast.expr) -> bool:
    """An HTTP status written as a number (a job's or a span's status is not one)."""
    return isinstance(value, ast.Constant) and type(value.value) is int and 100 <= value.value < 600


def test_one_plan_class() -> None:
    """A judgment's plan is one type (``engine.plan.Plan``) for every door: no other class is called Plan."""
    plans = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(_parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "Plan"
    ]
    assert [p.split(":")[0] for p in plans] == ["engine/plan.py"], plans
