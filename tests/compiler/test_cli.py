"""`flowc check` and `flowc compile` as a user runs them: exit codes, output, files."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from flowc.runtime import CompiledFlow, __version__

GOOD = """flow good
context { n: int = 0 }
event go(k: int)
initial state A { on go -> B do n = event.k }
final state B
"""
BAD = "flow bad\nevent go\ninitial state A { on og -> B }\nfinal state B\n"
WARNS = """flow warns
context { n: int = 0 }
event go(k: int)
event unused
initial state A { on go -> B do n = event.k }
final state B
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "good.flow").write_text(GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.flow").write_text(BAD)
    (tmp_path / "warns.flow").write_text(WARNS)
    (tmp_path / "notes.txt").write_text("not a flow")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_clean_file_exits_0(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", str(files / "good.flow"))
    assert code == 0
    assert out == ""
    assert "0 errors, 0 warnings in 1 file" in err


def test_check_directory_finds_flows_recursively_and_fails_on_errors(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "check", str(files))
    assert code == 1
    assert f"{files / 'sub' / 'bad.flow'}:3:22: error[E105]: unknown event `og`" in out
    assert "help: did you mean `go`?" in out
    assert "3 | initial state A { on og -> B }" in out
    assert "1 error, 1 warning in 3 files" in err


def test_warnings_pass_unless_strict(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(files / "warns.flow"))
    assert code == 0
    assert "warning[W310]" in out
    code, _, _ = run(capsys, "check", "--strict", str(files / "warns.flow"))
    assert code == 1


def test_json_format(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--format", "json", str(files))
    assert code == 1
    report = json.loads(out)
    by_file = {Path(f["file"]).name: f for f in report["files"]}
    assert by_file["good.flow"] == {"file": str(files / "good.flow"), "ok": True, "diagnostics": []}
    (diag,) = by_file["bad.flow"]["diagnostics"]
    assert diag["code"] == "E105" and (diag["line"], diag["column"]) == (3, 22)
    assert diag["help"] == "did you mean `go`?"
    assert report["errors"] == 1 and report["warnings"] == 1


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "nope.flow"))
    assert code == 2
    assert "no such file or directory" in err


def test_directory_without_flows_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "check", str(tmp_path))
    assert code == 2
    assert "no .flow files" in err


def test_bad_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--no-such-flag", "x.flow"])
    assert exit_info.value.code == 2


def test_compile_writes_loadable_json(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_path = files / "out" / "good.json"
    code, _, err = run(capsys, "compile", str(files / "good.flow"), "-o", str(out_path))
    assert code == 0
    flow = CompiledFlow.from_json(out_path.read_text())
    assert err.strip().splitlines()[-1] == f"wrote {out_path} ({flow.hash})"
    assert flow.name == "good" and flow.initial == "A"
    assert [t.target for t in flow.transitions] == ["B"]


def test_compile_to_stdout_is_deterministic(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, first, _ = run(capsys, "compile", str(files / "good.flow"))
    _, second, _ = run(capsys, "compile", str(files / "good.flow"))
    assert first == second
    assert json.loads(first)["ir_version"] == 1


def test_compile_refuses_a_flow_with_errors(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = files / "bad.json"
    code, _, err = run(capsys, "compile", str(files / "sub" / "bad.flow"), "-o", str(out_path))
    assert code == 1
    assert "error[E105]" in err
    assert not out_path.exists()


def test_compile_strict_refuses_warnings(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "compile", "--strict", str(files / "warns.flow"))
    assert code == 1


def test_console_script_version_and_help() -> None:
    exe = Path(sys.executable).with_name("flowc")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"flowc {__version__}"
    for command in ("check", "compile"):
        helped = subprocess.run(
            [str(exe), command, "--help"], capture_output=True, text=True, check=True
        )
        assert "usage: flowc " + command in helped.stdout
        assert "Exit status" in helped.stdout or "--strict" in helped.stdout


def test_color_is_off_when_not_a_terminal_and_forced_on_request(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, plain, _ = run(capsys, "check", str(files / "sub" / "bad.flow"))
    assert "\x1b[" not in plain
    _, colored, _ = run(capsys, "check", "--color", "always", str(files / "sub" / "bad.flow"))
    assert "\x1b[1;31merror[E105]" in colored


def test_readme_example_compiles_cleanly() -> None:
    from flowc.compiler import compile_source

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    source = readme.split("```flow\n", 1)[1].split("```", 1)[0]
    assert compile_source(source, "README.flow").diagnostics == []


def test_a_sub_command_loads_only_its_own_module(files: Path) -> None:
    """`flowc check` does not import the other sub-commands (the store, the language server):
    a quarter of a second of a short check."""
    code = (
        "import sys; from flowc.compiler import cli;"
        f"code = cli.main(['check', {str(files / 'good.flow')!r}]);"
        "loaded = sorted(m for m in sys.modules if m.startswith('flowc.compiler.commands.'));"
        "print(code, loaded)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0 ['flowc.compiler.commands.check']"


def test_checking_a_well_formed_flow_loads_neither_lark_jinja_nor_the_machine(
    files: Path,
) -> None:
    """A check of a file on the fast parser's path without templates needs none of them: Lark,
    Jinja2 and the runtime's machine and instances are most of the start-up they would add."""
    code = (
        "import sys; from flowc.compiler import cli;"
        f"code = cli.main(['check', {str(files / 'good.flow')!r}]);"
        "heavy = ('lark', 'jinja2', 'flowc.runtime.machine', 'flowc.runtime.instance');"
        "print(code, sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0 []"


def test_a_typo_or_top_level_help_still_lists_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["chek"])
    assert "invalid choice: 'chek'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "lsp" in capsys.readouterr().out


def test_the_program_leaves_checked_results_to_the_exit(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run as the `flowc` program, `check` keeps its results for the process exit, which skips
    freeing them (`os._exit`, after the output is flushed); called in-process it keeps nothing."""
    from flowc.compiler import cli

    assert main(["check", str(files / "good.flow")]) == 0
    assert cli._left_for_exit is None
    exits: list[int] = []

    def fake_exit(code: int) -> None:
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(cli.os, "_exit", fake_exit)
    monkeypatch.setattr(sys, "argv", ["flowc", "check", str(files / "sub" / "bad.flow")])
    try:
        with pytest.raises(SystemExit):
            cli.entry()
        assert exits == [1]
        assert cli._left_for_exit is not None
        (kept,) = cli._left_for_exit
        assert [r.source.path for r in kept] == [str(files / "sub" / "bad.flow")]
    finally:
        monkeypatch.setattr(cli, "_left_for_exit", None)
        gc.unfreeze()  # what it kept was frozen out of the collector's sight: give it back
    assert "unknown event `og`" in capsys.readouterr().out


def test_python_dash_m_leaves_checked_results_to_the_exit_too(files: Path) -> None:
    # `python -m flowc.compiler.cli` runs the module as `__main__`; the commands import it by
    # its name, a second copy, which must be the one told it runs as the program. Seen from
    # outside: the process leaves by `os._exit` (no atexit hook runs), its output flushed.
    code = (
        "import atexit, runpy, sys; "
        "atexit.register(lambda: print('atexit hook ran')); "
        f"sys.argv = ['flowc', 'check', {str(files / 'sub' / 'bad.flow')!r}]; "
        "runpy.run_module('flowc.compiler.cli', run_name='__main__', alter_sys=True)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert "error[E105]: unknown event `og`" in done.stdout
    assert "atexit hook ran" not in done.stdout


def test_the_console_script_flushes_before_it_exits(files: Path) -> None:
    exe = Path(sys.executable).with_name("flowc")
    done = subprocess.run(
        [str(exe), "check", str(files / "sub" / "bad.flow")], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "error[E105]: unknown event `og`" in done.stdout
    assert "1 error, 0 warnings in 1 file" in done.stderr
