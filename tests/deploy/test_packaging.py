"""The distribution ships one top-level package, ``pcfjudge``: no ``app`` package that would clash with users' own."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.basics import ROOT


@pytest.mark.slow
def test_wheel_contains_only_the_pcfjudge_package(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("pcfjudge-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"pcfjudge", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, tops
    assert "pcfjudge/__init__.py" in names and "pcfjudge/judging/consensus.py" in names
    assert not any(name.startswith("app/") for name in names)
    static = ROOT / "app" / "pcfjudge" / "static"  # the playground page, served at / from package data
    assert {f"pcfjudge/static/{f.name}" for f in static.iterdir()} <= set(names)
    assert "pcfjudge/static/index.html" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "pcfjudge = pcfjudge.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_a_user_package_named_app_imports_next_to_ours(tmp_path: Path) -> None:
    """A FastAPI project's own ``app`` package and pcfjudge live side by side (it used to break the old layout)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text('NAME = "the user\'s app"\n')
    (tmp_path / "app" / "judging.py").write_text("VALUE = 42\n")
    script = (
        "import app, app.judging, pcfjudge\n"
        "from pcfjudge.api.app import create_app\n"
        "from pcfjudge.judging.consensus import aggregate\n"
        'assert app.NAME == "the user\'s app" and app.judging.VALUE == 42, app.__file__\n'
        "assert pcfjudge.__version__ and create_app and aggregate\n"
        "print(app.__file__, pcfjudge.__file__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    user_app, ours = done.stdout.split()
    assert Path(user_app).parent == tmp_path / "app" and Path(ours).parent.name == "pcfjudge"


def test_public_surface_is_curated_and_light() -> None:
    """``import pcfjudge`` gives the version and the HTTP models, and loads no server, cache or provider SDK."""
    script = (
        "import sys, pcfjudge\n"
        "missing = [n for n in pcfjudge.__all__ if not hasattr(pcfjudge, n)]\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'fastapi', 'starlette', 'redis', 'openai', 'anthropic'})\n"
        "print(missing, heavy, pcfjudge.__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split(maxsplit=2)[:2] == ["[]", "[]"], done.stdout
    import pcfjudge

    assert {"__version__", "ListwiseRequest", "ListwiseResponse", "PairwiseRequest", "PairwiseResponse"} <= set(
        pcfjudge.__all__
    )
