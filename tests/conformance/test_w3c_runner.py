"""The conformance runner on charts written for these tests: fails (one that does not
compile, one that ends elsewhere), an unsupported file, the `subN` documents left out, totals
and the per-feature table. A passing chart needs eventless rules or raised events to get
anywhere, so the pass case is in tests/scxml/pending_after_merge.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from w3c_runner import features_table, main, run_all, totals

NS = 'xmlns="http://www.w3.org/2005/07/scxml"'


def write(directory: Path, name: str, body: str, attrs: str = "") -> None:
    text = f'<scxml {NS} datamodel="ecmascript"{attrs}>\n{body}\n</scxml>\n'
    (directory / f"{name}.scxml").write_text(text, encoding="utf-8")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    # datamodel="ecmascript" as in some of the suite's Python files: read as Python.
    # Comparing an `int` with a `str` does not compile (E201): a compile error that is not
    # missing syntax is a failure of the import, not "unsupported"
    write(
        tmp_path,
        "test001",
        '  <datamodel><data id="x" expr="1"/></datamodel>\n'
        '  <state id="s"><transition cond="x == \'a\'" target="pass"/></state>\n'
        '  <final id="pass"/>',
    )
    write(
        tmp_path,
        "test002",
        '  <datamodel><data id="n" expr="1"/></datamodel>\n  <state id="s0"/>\n'
        '  <final id="pass"/>',
    )
    write(tmp_path, "test003", '  <state id="s0"><invoke src="x.scxml"/></state>')
    write(tmp_path, "test003sub1", '  <final id="pass"/>')
    return tmp_path


def test_each_test_is_pass_fail_or_unsupported_with_a_reason(suite: Path) -> None:
    outcomes = run_all([suite])
    assert [(o.name, o.status) for o in outcomes] == [
        ("test001", "fail"),
        ("test002", "fail"),
        ("test003", "unsupported"),
    ]
    assert outcomes[0].reason.startswith("compile: test001.flow:9:13: error[E201]")
    assert outcomes[1].reason == "ended in `s0`"
    assert outcomes[2].reason.startswith("E408 line 2: <invoke>")
    assert totals(outcomes) == {"pass": 0, "fail": 2, "unsupported": 1}
    assert features_table(outcomes) == {"eventless": ["test001"], "invoke": ["test003"]}


def test_the_command_line_prints_each_test_and_the_totals(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(suite), "--features"]) == 0
    out = capsys.readouterr().out
    assert "test002      fail         ended in `s0`\n" in out
    assert "invoke (1): test003\n" in out
    assert out.endswith("3 tests: 0 pass, 2 fail, 1 unsupported\n")


def test_without_the_host_only_the_runtime_delivers_sends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a computed event name is the host's to send; a named one is a scheduled event
    body = (
        "  <state id=\"s0\">\n    <onentry><send eventexpr=\"'go' + 'ne'\"/>"
        '<send event="tick" delay="1s"/></onentry>\n'
        '    <transition event="gone" target="s1"/>\n  </state>\n'
        '  <state id="s1"><transition event="tick" target="pass"/></state>\n'
        '  <final id="pass"/>'
    )
    write(tmp_path, "test010", body.replace("gone", "tick").replace("s1", "pass", 1), "")
    write(tmp_path, "test011", body)
    assert [o.status for o in run_all([tmp_path])] == ["pass", "pass"]
    assert [o.status for o in run_all([tmp_path], host=False)] == ["pass", "fail"]
    assert main([str(tmp_path), "--no-host"]) == 0
    assert capsys.readouterr().out.endswith("2 tests: 1 pass, 1 fail, 0 unsupported\n")
