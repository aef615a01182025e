"""Hostile SCXML files: each is refused with a diagnostic, runs nothing, and is read within
bounded memory (measured with tracemalloc) and time."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from flowc.compiler.scxml.importer import MAX_DATA_FILE, import_scxml
from flowc.compiler.scxml.reader import MAX_BYTES, MAX_DEPTH, MAX_ELEMENTS

NS = 'xmlns="http://www.w3.org/2005/07/scxml"'
#: Peak memory allowed for refusing one hostile file; the billion-laughs document below would
#: need gigabytes if its entities were expanded.
MEMORY_BOUND = 64 * 1024 * 1024
#: Not a benchmark: a guard that a refusal never hangs (real figures are microseconds), in CPU
#: seconds of this process, which a busy machine or parallel test workers do not inflate.
TIME_BOUND = 10.0


def refused(text: str | bytes) -> list[tuple[str, int, int]]:
    tracemalloc.start()
    started = time.process_time()
    try:
        result = import_scxml(text, "hostile.scxml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - started < TIME_BOUND
    assert peak < MEMORY_BOUND, peak
    assert result.flow_text is None
    assert result.diagnostics
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


def billion_laughs() -> str:
    entities = ['  <!ENTITY lol0 "lol">']
    for i in range(1, 10):
        entities.append(f'  <!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">')
    return (
        '<?xml version="1.0"?>\n<!DOCTYPE scxml [\n'
        + "\n".join(entities)
        + f"\n]>\n<scxml {NS}><state id='&lol9;'/></scxml>\n"
    )


def test_billion_laughs_is_refused_before_any_entity_is_declared() -> None:
    assert refused(billion_laughs()) == [("E402", 2, 1)]


def test_quadratic_blowup_without_a_dtd_is_an_undefined_entity() -> None:
    text = f"<scxml {NS}><state id='{'&a;' * 100_000}'/></scxml>"
    assert [code for code, *_ in refused(text)] == ["E401"]


def test_an_external_entity_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET", encoding="utf-8")
    text = (
        f'<?xml version="1.0"?>\n<!DOCTYPE scxml [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>\n'
        f"<scxml {NS}><state id='a'><onentry><log expr='&xxe;'/></onentry></state></scxml>"
    )
    result = import_scxml(text, "xxe.scxml")
    assert [d.code for d in result.diagnostics] == ["E402"]
    assert "TOP-SECRET" not in repr(result)


def test_an_external_dtd_and_parameter_entities_are_refused() -> None:
    text = (
        '<?xml version="1.0"?>\n<!DOCTYPE scxml SYSTEM "http://example.invalid/x.dtd">\n'
        f"<scxml {NS}/>"
    )
    assert refused(text) == [("E402", 2, 1)]
    text = (
        '<?xml version="1.0"?>\n<!DOCTYPE scxml [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>'
        f"\n<scxml {NS}/>"
    )
    assert refused(text) == [("E402", 2, 1)]


def test_import_and_dunder_escapes_run_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"""<scxml {NS} datamodel="python">
  <datamodel>
    <data id="x" expr="__import__('os').system('touch {marker}')"/>
  </datamodel>
  <state id="a">
    <transition cond="().__class__.__bases__[0].__subclasses__()" target="a"/>
    <transition cond="x.__globals__" target="a"/>
    <onentry>
      <assign location="x" expr="getattr(x, '__dict__')"/>
      <assign location="x" expr="eval('1')"/>
      <assign location="x" expr="(lambda: 1)()"/>
    </onentry>
  </state>
</scxml>
"""
    found = refused(text)
    assert [code for code, *_ in found] == ["E411", "E411", "E411", "E411", "E411", "E411"]
    assert [line for _, line, _ in found] == [3, 6, 7, 9, 10, 11]
    assert not marker.exists()


def test_scripts_are_refused_with_every_other_problem() -> None:
    text = f"""<scxml {NS} datamodel="python">
  <script>import os; os.system("true")</script>
  <state id="a">
    <onentry><script src="evil.py"/></onentry>
    <transition event="go" cond="__builtins__" target="nowhere"/>
  </state>
</scxml>
"""
    assert refused(text) == [("E407", 2, 3), ("E407", 4, 14), ("E411", 5, 5), ("E413", 5, 5)]


def test_a_script_is_read_as_assignments_and_its_escapes_run_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"""<scxml {NS} datamodel="python">
  <script>x = __import__('os').system('touch {marker}')</script>
  <state id="a">
    <onentry><script>
      y = 1
      exec("open('{marker}', 'w')")
    </script></onentry>
    <onexit><script>z = [c for c in ().__class__.__bases__]</script></onexit>
  </state>
</scxml>
"""
    assert refused(text) == [("E411", 2, 3), ("E407", 4, 14), ("E410", 8, 13)]
    assert not marker.exists()


def test_data_src_reads_only_a_plain_file_beside_the_chart(tmp_path: Path) -> None:
    chart_dir = tmp_path / "charts"
    (chart_dir / "sub").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("'do not read'", encoding="utf-8")
    (chart_dir / "sub" / "x.txt").write_text("1", encoding="utf-8")
    (chart_dir / ".env").write_text("1", encoding="utf-8")
    (chart_dir / "link.txt").symlink_to(secret)
    (chart_dir / "big.txt").write_text("1" * (MAX_DATA_FILE + 1), encoding="utf-8")
    (chart_dir / "latin.txt").write_bytes("'caf\u00e9'".encode("latin-1"))
    os.mkfifo(chart_dir / "pipe")  # opened without waiting for a writer, then refused
    names = [
        f"file:{secret}",
        "file:../secret.txt",
        "sub/x.txt",
        "file:.env",
        "link.txt",
        "big.txt",
        "latin.txt",
        "pipe",
        "missing.txt",
        "http://example.com/x",
    ]
    data = "".join(f'<data id="v{i}" src="{n}"/>' for i, n in enumerate(names))
    text = f"""<scxml {NS} datamodel="python">
  <datamodel>{data}</datamodel>
  <state id="a"/>
</scxml>
"""
    result = import_scxml(text, str(chart_dir / "c.scxml"), data_dir=chart_dir)
    assert result.flow_text is None
    assert [d.code for d in result.diagnostics] == ["E409"] * len(names)
    assert not any("do not read" in d.message for d in result.diagnostics)


def test_a_file_over_the_size_bound_is_not_parsed() -> None:
    text = f"<scxml {NS}><!--" + "x" * MAX_BYTES + "--></scxml>"
    assert refused(text) == [("E403", 1, 1)]


def test_nesting_and_element_count_are_bounded() -> None:
    deep = f"<scxml {NS}>" + "<state>" * (MAX_DEPTH + 5) + "</state>" * (MAX_DEPTH + 5)
    assert [code for code, *_ in refused(deep + "</scxml>")] == ["E404"]
    many = f"<scxml {NS}>" + "<state/>" * (MAX_ELEMENTS + 1) + "</scxml>"
    assert [code for code, *_ in refused(many)] == ["E403"]


@pytest.mark.parametrize(
    "expr",
    [
        "open('/etc/passwd').read()",
        "[c for c in ().__class__.__base__.__subclasses__()]",
        "'a' * 10 ** 10",
        "(1).__add__(2)",
        "globals()",
        "__builtins__['eval']('1')",
    ],
)
def test_expressions_that_would_reach_python_are_refused(expr: str) -> None:
    text = f"""<scxml {NS} datamodel="python">
  <datamodel><data id="x" expr="0"/></datamodel>
  <state id="a"><onentry><assign location="x" expr="{expr.replace('"', "&quot;")}"/></onentry>
  </state>
</scxml>"""
    codes = [code for code, *_ in refused(text)]
    assert codes and set(codes) <= {"E410", "E411"}, codes


def test_an_enormous_expression_is_refused_without_recursing() -> None:
    expr = "1" + "+1" * 100_000
    text = f"""<scxml {NS} datamodel="python">
  <datamodel><data id="x" expr="0"/></datamodel>
  <state id="a"><onentry><assign location="x" expr="{expr}"/></onentry></state>
</scxml>"""
    assert [code for code, *_ in refused(text)] == ["E410"]


def _chart(encoding: str) -> str:
    return (
        f'<?xml version="1.0" encoding="{encoding}"?>\n'
        f'<scxml {NS} version="1.0" initial="a">\n'
        '  <state id="a"><transition event="go" target="b"><log label="日本" expr="1"/>'
        '</transition></state>\n  <final id="b"/>\n</scxml>\n'
    )


@pytest.mark.parametrize(
    ("declared", "codec"),
    [
        ("Shift_JIS", "shift_jis"),
        ("UTF-7", "utf-7"),
        ("EUC-JP", "euc_jp"),
        ("GB2312", "gb2312"),
        ("Big5", "big5"),
        ("UTF-32", "utf-32"),  # with a byte-order mark
        ("UTF-32", "utf-32-le"),  # without one
        ("UTF-16", "utf-16-be"),
    ],
)
def test_a_multi_byte_encoding_is_read_in_that_encoding(declared: str, codec: str) -> None:
    result = import_scxml(_chart(declared).encode(codec), "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    assert "on go -> b" in result.flow_text
    assert "日本" in result.flow_text


def test_an_unknown_encoding_is_a_diagnostic() -> None:
    assert refused(_chart("x-klingon").encode("utf-8")) == [("E401", 1, 1)]


def test_bytes_invalid_in_the_declared_encoding_are_a_diagnostic() -> None:
    data = _chart("Shift_JIS").encode("shift_jis").replace(b'initial="a"', b'initial="a\x81\x20"')
    assert refused(data) == [("E401", 2, 72)]  # the column of the 0x81
