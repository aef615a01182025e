"""`flowc mcp`'s own errors: they are reported before anything is served."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler.cli import main

FLOWS = Path(__file__).parents[2] / "flows"


def test_help_lists_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["mcp", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--transport {stdio,http}" in out and "--store URL" in out


def test_a_flow_with_errors_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.flow"
    broken.write_text("flow broken\ninitial state A { on go -> B }\nfinal state B\n")
    assert main(["mcp", str(broken), "--store", f"sqlite:///{tmp_path / 'x.db'}"]) == 1
    err = capsys.readouterr().err
    assert "error[E105]" in err and "broken.flow:2:" in err
    assert not (tmp_path / "x.db").exists()


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = str(FLOWS / "interactive_stage.flow")
    assert main(["mcp", str(tmp_path / "missing.flow")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["mcp", flow, "--store", "mysql://x"]) == 2
    assert "unknown store URL" in capsys.readouterr().err
    assert main(["mcp", flow, flow, "--store", "memory:"]) == 2
    assert "given twice" in capsys.readouterr().err
    assert main(["mcp", flow, "--transport", "http", "--port", "0"]) == 2
