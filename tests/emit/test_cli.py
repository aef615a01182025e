"""`flowc render` and `flowc docs` from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowc.compiler.cli import main

from .conftest import SAMPLE


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "review.flow"
    path.write_text(SAMPLE, encoding="utf-8")
    return path


def test_render_formats_from_extension(flow_file: Path, tmp_path: Path) -> None:
    for name, magic in [
        ("out.svg", b"<?xml"),
        ("out.png", b"\x89PNG"),
        ("out.pdf", b"%PDF"),
        ("out.dot", b"digraph"),
        ("out.mmd", b"---\ntitle:"),
    ]:
        out = tmp_path / name
        assert main(["render", str(flow_file), "-o", str(out)]) == 0
        assert out.read_bytes().startswith(magic), name


def test_render_dot_to_stdout(flow_file: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["render", str(flow_file), "--labels", "full"]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b"digraph review") and b"append(notes, event.note)" in out


def test_render_mermaid_to_stdout(
    flow_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["render", str(flow_file), "--format", "mermaid", "--direction", "LR"]) == 0
    assert b"direction LR" in capsysbinary.readouterr().out


def test_render_usage_errors(flow_file: Path, tmp_path: Path) -> None:
    assert main(["render", str(flow_file), "-o", str(tmp_path / "x.jpeg")]) == 2
    assert main(["render", str(tmp_path / "missing.flow")]) == 2
    assert main(["render", str(flow_file), "--highlight", "NOWHERE"]) == 2


def test_render_a_file_with_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.flow"
    bad.write_text("flow bad\ninitial state A { on go -> B }\n", encoding="utf-8")
    assert main(["render", str(bad)]) == 1
    assert "E105" in capsys.readouterr().err


def test_render_compiled_json(flow_file: Path, tmp_path: Path) -> None:
    compiled = tmp_path / "review.json"
    assert main(["compile", str(flow_file), "-o", str(compiled)]) == 0
    out = tmp_path / "from-json.dot"
    assert main(["render", str(compiled), "-o", str(out)]) == 0
    assert "ROUTE" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", ["render", "docs"])
@pytest.mark.parametrize("damage", ["initial", "target"])
def test_a_compiled_json_naming_a_missing_state_is_refused_in_one_line(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, damage: str
) -> None:
    # Schema-valid, hash cleared as a hand edit would: the graph itself is what is wrong.
    compiled = tmp_path / "review.json"
    assert main(["compile", str(flow_file), "-o", str(compiled)]) == 0
    ir = json.loads(compiled.read_text(encoding="utf-8"))
    if damage == "initial":
        ir["initial"] = "NOWHERE"
    else:
        ir["transitions"][0]["target"] = "NOWHERE"
    ir["hash"] = ""
    compiled.write_text(json.dumps(ir), encoding="utf-8")
    capsys.readouterr()
    out = tmp_path / ("out.dot" if command == "render" else "out.md")
    assert main([command, str(compiled), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"flowc {command}: {compiled}: ")
    assert "'NOWHERE'" in err and err.count("\n") == 1


def test_render_snapshot(flow_file: Path, tmp_path: Path) -> None:
    snapshot = tmp_path / "snap.json"
    snapshot.write_text(
        json.dumps(
            {
                "flow": "review",
                "state": "REVIEW",
                "context": {},
                "history": [
                    {"seq": 1, "source": None, "target": "DRAFT", "trigger": None},
                    {"seq": 2, "source": "DRAFT", "target": "ROUTE", "trigger": "submit"},
                    {"seq": 3, "source": "ROUTE", "target": "REVIEW", "trigger": None},
                ],
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "snap.dot"
    assert main(["render", str(flow_file), "--snapshot", str(snapshot), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    review = next(line for line in text.splitlines() if line.strip().startswith("REVIEW ["))
    assert "#ffca28" in review
    assert "penwidth" in next(line for line in text.splitlines() if "DRAFT -> ROUTE" in line)
    snapshot.write_text("[1, 2]", encoding="utf-8")
    assert main(["render", str(flow_file), "--snapshot", str(snapshot)]) == 2
    # A snapshot of another flow is refused, even when its state names exist here too.
    snapshot.write_text(json.dumps({"flow": "other", "state": "REVIEW"}), encoding="utf-8")
    assert main(["render", str(flow_file), "--snapshot", str(snapshot), "-o", str(out)]) == 2


def test_render_without_graphviz_names_the_package(flow_file: Path, tmp_path: Path) -> None:
    # Only the virtualenv's bin on PATH: Python runs, `dot` is nowhere to be found.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowc.compiler.cli",
            "render",
            str(flow_file),
            "-o",
            str(tmp_path / "x.svg"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "apt-get install graphviz" in result.stderr
    assert "Traceback" not in result.stderr


def test_docs_single_page(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["docs", str(flow_file)]) == 0
    assert "```mermaid" in capsys.readouterr().out
    out = tmp_path / "site" / "review.md"
    assert main(["docs", str(flow_file), "-o", str(out)]) == 0
    assert (tmp_path / "site" / "review.svg").read_bytes().startswith(b"<?xml")
    assert "](review.svg)" in out.read_text(encoding="utf-8")


def test_docs_out_dir_and_check(flow_file: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert main(["docs", str(flow_file), "--out-dir", str(site), "--check"]) == 1
    assert main(["docs", str(flow_file), "--out-dir", str(site)]) == 0
    assert sorted(p.name for p in site.iterdir()) == ["README.md", "review.md", "review.svg"]
    assert main(["docs", str(flow_file), "--out-dir", str(site), "--check"]) == 0
    flow_file.write_text(SAMPLE.replace('"Author writes"', '"Author drafts"'), encoding="utf-8")
    assert main(["docs", str(flow_file), "--out-dir", str(site), "--check"]) == 1


def test_docs_usage_errors(flow_file: Path) -> None:
    assert main(["docs", str(flow_file), str(flow_file), "-o", "x.md"]) == 2
    assert main(["docs", str(flow_file), "--check"]) == 2


def test_render_a_snapshot_saved_by_flowc_run(flow_file: Path, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"event": "submit", "payload": {"text": "draft"}}\n'
        # `on decide -> DRAFT back` is a backward move: it needs force.
        '{"event": "decide", "payload": {"verdict": "REJECT", "note": "redo"}, "force": true}\n'
        '{"event": "submit", "payload": {"text": "again"}}\n',
        encoding="utf-8",
    )
    snapshot = tmp_path / "run.json"
    run = ["run", str(flow_file), "--events", str(events), "--snapshot", str(snapshot)]
    assert main(run) == 0
    out = tmp_path / "run.dot"
    assert main(["render", str(flow_file), "--snapshot", str(snapshot), "-o", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()

    def line(text: str) -> str:
        return next(x for x in lines if text in x)

    assert "#ffca28" in line("REVIEW [")  # where the instance is now
    # DRAFT -> REVIEW went through the choice state ROUTE: both hops are drawn as taken.
    for edge in ("DRAFT -> ROUTE", "ROUTE -> REVIEW", "REVIEW -> DRAFT"):
        assert "penwidth" in line(edge), edge
    assert "penwidth" not in line("ROUTE -> ESCALATED")
