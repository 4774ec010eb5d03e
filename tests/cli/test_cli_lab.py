"""The lab's commands (``pcfjudge eval|bench|calibrate|fake-provider``) come from ``pcfjudge_lab`` when it is installed,
and otherwise answer with one line saying how to install it (exit 2); ``pcfjudge serve`` never imports it
(tests/test_layout.py)."""

from __future__ import annotations

import sys

import pytest
from pcfjudge.cli.main import LAB_COMMANDS, build_parser, lab_installed, main
from pcfjudge_lab.commands import COMMANDS


def test_the_service_knows_the_labs_command_names() -> None:
    assert LAB_COMMANDS == COMMANDS
    assert lab_installed()


@pytest.mark.parametrize("command", LAB_COMMANDS)
def test_with_the_lab_each_command_is_the_labs(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    assert f"usage: pcfjudge {command}" in capsys.readouterr().out


@pytest.mark.parametrize("command", LAB_COMMANDS)
def test_without_the_lab_each_command_says_how_to_install_it(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "pcfjudge_lab" or m.startswith("pcfjudge_lab.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pcfjudge_lab", None)  # import pcfjudge_lab now fails, as when not installed
    assert not lab_installed()
    assert main([command, "--some-option", "value"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert f"pcfjudge {command} is part of the lab (pcfjudge-lab), which is not installed" in err
    assert "pip install -e ./lab" in err and "pip install pcfjudge-lab" in err
    helped = build_parser().format_help()  # still listed, with the same hint
    assert all(name in helped for name in LAB_COMMANDS) and "the lab, not installed" in helped
    assert "pcfjudge_lab" not in {m.split(".")[0] for m in sys.modules if sys.modules[m] is not None}
