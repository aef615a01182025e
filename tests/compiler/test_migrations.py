"""`migrate from N { ... }`: parsing, checks, the IR it lowers to, and `flowc run` resuming an
older snapshot through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.cli import main
from flowc.runtime import Machine

V1 = """\
flow tally
version 1
context { count: int = 0, scratch: str = "" }
event inc
initial state OPEN { on inc -> self do count += 1 }
"""

V2 = """\
flow tally
version 2
migrate from 1 {
  state OPEN -> COUNTING
  field count -> total
  drop scratch
}
context { total: int = 0, label: str = "new" }
event inc
initial state COUNTING { on inc -> self do total += 1 }
"""


def errors(source: str) -> list[tuple[str, int, int, str]]:
    result = compile_source(source, "m.flow")
    return [(d.code, d.span.line, d.span.column, d.message) for d in result.diagnostics]


def test_lowers_to_the_ir_field() -> None:
    result = compile_source(V2, "v2.flow")
    assert result.ok and result.flow is not None
    assert [m.model_dump() for m in result.flow.migrations] == [
        {
            "from_version": 1,
            "states": {"OPEN": "COUNTING"},
            "rename": {"count": "total"},
            "drop": ("scratch",),
        }
    ]
    # It survives the JSON round trip the runtime loads.
    assert Machine.from_json(result.flow.to_json()).raw["migrations"][0]["from_version"] == 1


def test_blocks_are_ordered_by_version_and_empty_ones_allowed() -> None:
    source = V2.replace("version 2", "version 4").replace(
        "migrate from 1", "migrate from 3 { }\nmigrate from 2 { drop old }\nmigrate from 1"
    )
    result = compile_source(source)
    assert result.ok and result.flow is not None
    assert [m.from_version for m in result.flow.migrations] == [1, 2, 3]


def test_a_flow_without_migrations_keeps_its_hash_shape() -> None:
    # An absent block adds nothing to the canonical JSON, so existing hashes did not move.
    result = compile_source(V1)
    assert result.flow is not None and "migrations" not in result.flow.canonical_json()


def test_its_words_stay_usable_as_names() -> None:
    source = """\
flow words
version 2
migrate from 1 { field migrate -> from }
context { from: int = 0, field: str = "", drop: bool = false }
event migrate(from: int)
initial state A { on migrate -> self do from = event.from; field = "x"; drop = true }
"""
    result = compile_source(source)
    assert result.ok, [str(d) for d in result.diagnostics]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("migrate from 2 { }", ("E207", 3, 14, "a migration comes from an earlier version")),
        ("migrate from 0 { }", ("E207", 3, 14, "a migration comes from an earlier version")),
        ("migrate from 1 { state OLD -> COUNTNG }", ("E104", 3, 31, "unknown state `COUNTNG`")),
        ("migrate from 1 { field a -> totl }", ("E108", 3, 29, "unknown context field `totl`")),
        ("migrate from 1 { drop total }", ("E122", 3, 23, "`total` is a context field")),
        (
            "migrate from 1 { state A -> COUNTING state A -> COUNTING }",
            ("E122", 3, 44, "maps state `A` twice"),
        ),
        ("migrate from 1 { field a -> total drop a }", ("E122", 3, 40, "field `a` twice")),
        ("migrate from 1 { }\nmigrate from 1 { }", ("E102", 4, 14, "declared twice")),
    ],
)
def test_mistakes_are_reported_where_they_are(
    block: str, expected: tuple[str, int, int, str]
) -> None:
    source = f"flow tally\nversion 2\n{block}\n" + V2.split("}\n", 1)[1]
    found = errors(source)
    assert len(found) == 1, found
    code, line, column, message = found[0]
    assert (code, line, column) == expected[:3]
    assert expected[3] in message


def test_did_you_mean_for_a_misspelled_target() -> None:
    result = compile_source(V2.replace("-> COUNTING\n", "-> COUNTNG\n", 1))
    [diag] = result.diagnostics
    assert diag.help == "did you mean `COUNTING`?"


def test_run_resumes_an_older_snapshot_through_the_flow_migration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = tmp_path / "v1.flow", tmp_path / "v2.flow"
    v1.write_text(V1, encoding="utf-8")
    v2.write_text(V2, encoding="utf-8")
    snapshot = tmp_path / "snap.json"
    events = tmp_path / "e.jsonl"
    events.write_text('{"event": "inc"}\n', encoding="utf-8")
    args = ["--events", str(events), "--snapshot", str(snapshot)]
    assert main(["run", str(v1), *args]) == 0
    assert main(["run", str(v2), *args]) == 0
    saved = json.loads(snapshot.read_text(encoding="utf-8"))
    assert (saved["version"], saved["state"], saved["context"]) == (
        2,
        "COUNTING",
        {"total": 2, "label": "new"},
    )
    # Without the block the old state has nowhere to go, and the error names the fix.
    snapshot.unlink()
    assert main(["run", str(v1), *args]) == 0
    v2.write_text(V2.replace("  state OPEN -> COUNTING\n", ""), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(v2), *args]) == 1
    err = capsys.readouterr().err
    assert "cannot resume" in err and "migrate from 1" in err
    assert json.loads(snapshot.read_text(encoding="utf-8"))["version"] == 1, "left as it was"
