"""`flowc fmt` as a user runs it: what it rewrites, what it reports, its exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flowc.compiler.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLEAN = "flow clean\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
MESSY = "flow messy\nevent go\ninitial state A{on go->B}\nfinal state B\n"
MESSY_FORMATTED = "flow messy\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
BROKEN = "flow broken\ninitial state A {  on go -> }\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "clean.flow").write_text(CLEAN)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "messy.flow").write_text(MESSY)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["fmt", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_fmt_rewrites_what_needs_it_and_only_that(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tree / "clean.flow"
    before = clean.stat().st_mtime_ns
    code, _, err = run(capsys, str(tree))
    assert code == 0
    assert (tree / "sub" / "messy.flow").read_text() == MESSY_FORMATTED
    assert clean.read_text() == CLEAN and clean.stat().st_mtime_ns == before
    assert "1 file reformatted, 1 file already formatted" in err
    assert [p.name for p in tree.rglob("*") if p.name.startswith(".")] == []  # no temp files
    assert run(capsys, "--check", str(tree))[0] == 0


def test_check_lists_the_files_to_reformat_and_writes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--check", str(tree))
    assert code == 1
    assert out == f"would reformat {tree / 'sub' / 'messy.flow'}\n"
    assert (tree / "sub" / "messy.flow").read_text() == MESSY
    assert "1 file would be reformatted, 1 file already formatted" in err


def test_diff_prints_the_change_and_writes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--diff", str(tree / "sub" / "messy.flow"))
    assert code == 1
    assert "-initial state A{on go->B}\n+initial state A { on go -> B }\n" in out
    assert (tree / "sub" / "messy.flow").read_text() == MESSY
    assert run(capsys, "--diff", str(tree / "clean.flow"))[:2] == (0, "")


def test_a_file_that_does_not_parse_is_reported_and_left_alone(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tree / "broken.flow"
    broken.write_text(BROKEN)
    code, _, err = run(capsys, "--color", "never", str(tree))
    assert code == 1
    assert f"{broken}:2:29: error[E003]" in err
    assert broken.read_text() == BROKEN
    # The other files are still formatted.
    assert (tree / "sub" / "messy.flow").read_text() == MESSY_FORMATTED
    assert "1 file not formatted: they do not parse" in err


def test_a_file_that_is_not_utf8_is_reported_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.flow"
    bad.write_bytes(b'flow bad\ninitial state A "\xff"\n')
    code, _, err = run(capsys, "--color", "never", str(bad))
    assert code == 1
    assert "error[E001]" in err
    assert bad.read_bytes() == b'flow bad\ninitial state A "\xff"\n'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere.flow"], "no such file or directory: nowhere.flow"),
        (["EMPTY_DIR"], "no .flow files found"),
        (["-", "x.flow"], "cannot be mixed"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    args = [str(tmp_path) if a == "EMPTY_DIR" else a for a in args]
    code, _, err = run(capsys, *args)
    assert code == 2
    assert message in err


def test_no_path_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["fmt"])
    assert exited.value.code == 2


def test_the_repository_flows_are_formatted() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flowc.compiler.cli", "fmt", "--check", "flows"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 files would be reformatted" in done.stderr


def test_standard_input_to_standard_output() -> None:
    command = [sys.executable, "-m", "flowc.compiler.cli", "fmt", "-"]
    done = subprocess.run(command, input=MESSY, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, MESSY_FORMATTED)
    done = subprocess.run([*command, "--check"], input=MESSY, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (1, "would reformat -\n")
    done = subprocess.run(command, input=BROKEN, capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert "-:2:29: error[E003]" in done.stderr


def test_a_folder_it_cannot_write_is_one_line_and_exit_1(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root, whom file modes do not stop: refuse at the OS boundary instead, where
    # a read-only folder refuses the temporary file fmt writes beside the original.
    import tempfile

    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    code, out, err = run(capsys, str(tree))
    assert code == 1
    assert out == ""
    assert err == f"flowc fmt: cannot write {tree / 'sub' / 'messy.flow'}: Permission denied\n"
    assert (tree / "sub" / "messy.flow").read_text() == MESSY
