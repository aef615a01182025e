"""`flowc import scxml` and `flowc export scxml`: files written, diagnostics with a caret, exit
codes 0 / 1 / 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from charts import FLAT

from flowc.compiler.cli import main
from flowc.compiler.driver import compile_file


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_writes_a_flow_that_compiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "counter.scxml"
    source.write_text(FLAT, encoding="utf-8")
    target = tmp_path / "out" / "counter.flow"
    code, out, err = run(capsys, "import", "scxml", str(source), "-o", str(target))
    assert code == 0, err
    assert f"wrote {target}" in err
    assert compile_file(target).flow is not None
    code, out, _ = run(capsys, "import", "scxml", str(source))
    assert code == 0 and out == target.read_text(encoding="utf-8")


def test_import_reports_each_problem_with_its_line_and_a_caret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.scxml"
    source.write_text(
        '<scxml xmlns="http://www.w3.org/2005/07/scxml" datamodel="python">\n'
        '  <state id="a">\n'
        "    <onentry><script>print(1)</script></onentry>\n"
        '    <transition cond="__import__(1)" target="a"/>\n'
        "  </state>\n</scxml>\n",
        encoding="utf-8",
    )
    code, out, err = run(capsys, "import", "scxml", str(source))
    assert code == 1 and out == ""
    assert f"{source}:3:14: error[E407]: <script>: scripts are refused" in err
    assert "3 |     <onentry><script>print(1)</script></onentry>\n" in err
    assert "  |              ^^^^^^^" in err
    assert f"{source}:4:5: error[E411]" in err
    assert "not imported" in err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "import", "scxml", str(tmp_path / "missing.scxml"))[0] == 2
    assert run(capsys, "export", "scxml", str(tmp_path / "missing.flow"))[0] == 2
    with pytest.raises(SystemExit) as exc:
        main(["import", "xstate", "x.json"])
    assert exc.value.code == 2


def test_export_then_import_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "t.flow"
    flow.write_text(
        "flow t\nevent go(n: int)\ncontext { n: int = 0 }\n"
        "initial state A {\n  on go if event.n > 1 -> B do n = event.n\n}\nfinal state B\n",
        encoding="utf-8",
    )
    scxml = tmp_path / "t.scxml"
    code, _, err = run(capsys, "export", "scxml", str(flow), "-o", str(scxml))
    assert code == 0, err
    assert "<scxml " in scxml.read_text(encoding="utf-8")
    code, out, err = run(capsys, "import", "scxml", str(scxml))
    assert code == 0, err
    assert "  on go if event.n > 1 -> B do n = event.n\n" in out


def test_export_refusal_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = tmp_path / "d.flow"
    flow.write_text(
        "flow d\ncontext { d: int = 5 }\ninitial state A {\n  after d s -> A\n}\n",
        encoding="utf-8",
    )
    code, out, err = run(capsys, "export", "scxml", str(flow))
    assert code == 1 and out == ""
    assert f"{flow}:4:3: error[E420]" in err  # at the timer whose delay is computed


@pytest.mark.parametrize(
    "sample",
    sorted((Path(__file__).parents[2] / "examples").glob("*.scxml")),
    ids=lambda p: p.name,
)
def test_shipped_scxml_samples_import_and_compile(sample: Path) -> None:
    from flowc.compiler import compile_source
    from flowc.compiler.scxml.importer import import_scxml

    result = import_scxml(sample.read_bytes(), str(sample))
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    compiled = compile_source(result.flow_text, sample.with_suffix(".flow").name)
    assert compiled.ok, [str(d) for d in compiled.diagnostics]
    assert compiled.diagnostics == [], [str(d) for d in compiled.diagnostics]


def test_data_src_is_read_beside_the_chart_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "loaded.scxml"
    source.write_text(
        '<scxml xmlns="http://www.w3.org/2005/07/scxml" datamodel="python">\n'
        '  <datamodel><data id="words" src="file:words.txt"/></datamodel>\n'
        '  <state id="s"/>\n</scxml>\n',
        encoding="utf-8",
    )
    (tmp_path / "words.txt").write_text("two\n   words\n", encoding="utf-8")
    code, _, err = run(capsys, "import", "scxml", str(source))
    assert code == 1 and f"{source}:2:14: error[E409]" in err and "--data-src" in err
    code, out, err = run(capsys, "import", "scxml", str(source), "--data-src")
    assert code == 0, err
    assert '  words: str = "two words"\n' in out
