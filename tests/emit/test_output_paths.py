"""`-o` for every command that writes a file: `-` is standard output, and a file that cannot be
written is one line and exit 1, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flowc.compiler.cli import main

from .conftest import SAMPLE

COMMANDS = (["compile"], ["render", "-f", "svg"], ["docs"])


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "review.flow"
    path.write_text(SAMPLE, encoding="utf-8")
    return path


def unwritable_folder(tmp_path: Path) -> Path:
    """A real folder no file can be created in: a read-only one, or /sys for root (whom file
    modes do not stop, but the kernel does)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder if not os.access(folder, os.W_OK) else Path("/sys")


def test_dash_is_standard_output_for_every_format(
    flow_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    monkeypatch.chdir(tmp_path)
    cases = [
        (["compile"], b"{"),
        (["render"], b"digraph"),
        (["render", "-f", "png"], b"\x89PNG"),
        (["render", "-f", "pdf"], b"%PDF"),
        (["render", "-f", "mermaid"], b"---\ntitle:"),
        (["docs"], b"# Document review"),
    ]
    for command, start in cases:
        assert main([*command, str(flow_file), "-o", "-"]) == 0, command
        assert capsysbinary.readouterr().out.startswith(start), command
    assert not (tmp_path / "-").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["review.flow"]


def test_compile_to_dash_is_the_json(
    flow_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["compile", str(flow_file), "-o", "-"]) == 0
    assert json.loads(capsysbinary.readouterr().out)["name"] == "review"


def test_docs_names_the_diagram_it_writes_beside_the_page(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pages" / "review.md"
    assert main(["docs", str(flow_file), "-o", str(out)]) == 0
    assert capsys.readouterr().err.strip() == f"wrote {out} and {out.with_suffix('.svg')}"
    assert out.with_suffix(".svg").read_bytes().startswith(b"<?xml")
    assert "review.svg" in out.read_text(encoding="utf-8")

    bare = tmp_path / "bare.md"
    assert main(["docs", str(flow_file), "-o", str(bare), "--no-svg"]) == 0
    assert capsys.readouterr().err.strip() == f"wrote {bare}"
    assert not bare.with_suffix(".svg").exists()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("where", ["/dev/full", "folder", "below-a-file", "read-only"])
def test_an_unwritable_output_is_one_line_and_exit_1(
    command: list[str],
    where: str,
    flow_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a-file").write_text("x")
    target = {
        "/dev/full": Path("/dev/full"),
        "folder": tmp_path,
        "below-a-file": tmp_path / "a-file" / "out.md",
        "read-only": unwritable_folder(tmp_path) / "out.md",
    }[where]
    assert main([*command, str(flow_file), "-o", str(target)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"flowc {command[0]}: cannot write "), err
    assert "\n" not in err and "Traceback" not in err


def test_a_missing_parent_folder_is_created(flow_file: Path, tmp_path: Path) -> None:
    for command in COMMANDS:
        out = tmp_path / command[0] / "deeper" / "out.md"
        assert main([*command, str(flow_file), "-o", str(out)]) == 0
        assert out.stat().st_size > 0


def test_docs_out_dir_that_is_a_file_is_one_line(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "site").write_text("x")
    assert main(["docs", str(flow_file), "--out-dir", str(tmp_path / "site")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("flowc docs: cannot write ") and "\n" not in err


@pytest.mark.parametrize("command", ["render", "docs"])
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_json_nested_100k_deep_is_a_clear_error(
    command: str, opening: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    closing = "]" if opening == "[" else "}"
    path.write_text(opening * 100_000 + "1" + closing * 100_000)
    assert main([command, str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"flowc {command}: {path}: JSON nested too deeply to be a flow"
