"""Each rule on `.flow` sources through the whole compiler, and the seed flows lint clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_file, compile_source

ROOT = Path(__file__).resolve().parents[2]

# (code, source that triggers it, the same flow fixed so that it does not)
CASES = [
    (
        "W301",
        "flow d\nevent go\ninitial state A { on go -> DONE }\nstate X { on go -> DONE }\n"
        "final state DONE\n",
        "flow d\nevent go\ninitial state A { on go -> X }\nstate X { on go -> DONE }\n"
        "final state DONE\n",
    ),
    (
        "W302",
        "flow d\nevent go\nevent park\ninitial state A { on go -> DONE\n on park -> P }\n"
        "state P\nfinal state DONE\n",
        "flow d\nevent go\nevent park\ninitial state A { on go -> DONE\n on park -> P }\n"
        "state P { on go -> DONE }\nfinal state DONE\n",
    ),
    (
        "W303",
        "flow d\nevent go\nevent loop\ninitial state A { on go -> DONE\n on loop -> L }\n"
        "state L { on loop -> A2 }\nstate A2 { on loop -> L }\nfinal state DONE\n",
        "flow d\nevent go\nevent loop\ninitial state A { on go -> DONE\n on loop -> L }\n"
        "state L { on loop -> A2 }\nstate A2 { on loop -> L\n on go -> DONE }\n"
        "final state DONE\n",
    ),
    (
        "E304",
        "flow d\ncontext { n: int = 0 }\nevent go\ninitial state A { on go -> C1 }\n"
        "choice state C1 { if n > 1 -> C2\n else -> DONE }\n"
        "choice state C2 { if n > 2 -> C1\n else -> A }\nfinal state DONE\n",
        "flow d\ncontext { n: int = 0 }\nevent go\ninitial state A { on go -> C1 }\n"
        "choice state C1 { if n > 1 -> C2\n else -> DONE }\n"
        "choice state C2 { if n > 2 -> A\n else -> DONE }\nfinal state DONE\n",
    ),
    (
        "W305",
        "flow d\ncontext { ok: bool = false }\nevent go\n"
        "initial state A { on go -> DONE\n on go if ok -> B }\nstate B { on go -> DONE }\n"
        "final state DONE\n",
        "flow d\ncontext { ok: bool = false }\nevent go\n"
        "initial state A { on go if ok -> B\n on go -> DONE }\nstate B { on go -> DONE }\n"
        "final state DONE\n",
    ),
    (
        "W306",
        "flow d\ncontext { n: int = 0 }\nevent go\n"
        "initial state A { on go if n > 1 -> DONE\n on go if n > 1 -> DONE\n on go -> A }\n"
        "final state DONE\n",
        "flow d\ncontext { n: int = 0 }\nevent go\n"
        "initial state A { on go if n > 1 -> DONE\n on go if n > 2 -> DONE\n on go -> A }\n"
        "final state DONE\n",
    ),
    (
        "W307",
        "flow d\ninitial state A { -> B\n -> C }\nstate B { -> DONE\n -> C back }\n"
        "state C { -> DONE }\nfinal state DONE\n",
        "flow d\ninitial state A { -> B\n -> C }\nstate B { -> DONE\n -> A back }\n"
        "state C { -> DONE }\nfinal state DONE\n",
    ),
    (
        "W308",
        "flow d\nevent answer\ninitial state W { on answer -> DONE\n after 1d -> R }\n"
        "state R { on answer -> DONE\n after 1h -> W }\nfinal state DONE\n",
        "flow d\ncontext { sent: int = 0 }\nevent answer\n"
        "initial state W { on answer -> DONE\n after 1d if sent < 3 -> R\n after 2d -> DONE }\n"
        "state R { entry do sent += 1\n on answer -> DONE\n after 1h -> W }\nfinal state DONE\n",
    ),
    (
        "W309",
        "flow d\ncontext { n: int = 0 }\nevent go\n"
        "initial state A { on go if n > 1 or 2 > 1 -> DONE }\nfinal state DONE\n",
        "flow d\ncontext { n: int = 0 }\nevent go\n"
        "initial state A { on go if n > 1 or n < 0 -> DONE\n on go -> A }\nfinal state DONE\n",
    ),
    (
        "W310",
        "flow d\nevent go\nevent stop\ninitial state A { on go -> DONE }\nfinal state DONE\n",
        "flow d\nevent go\nevent stop\ninitial state A { on go -> DONE\n on stop -> DONE }\n"
        "final state DONE\n",
    ),
    (
        "W311",
        "flow d\nenum Level { LOW, HIGH }\nevent go\ninitial state A { on go -> DONE }\n"
        "final state DONE\n",
        "flow d\nenum Level { LOW, HIGH }\nevent go(level: Level)\n"
        "initial state A { on go -> DONE }\nfinal state DONE\n",
    ),
    (
        "W312",
        "flow d\ncontext { seen: int = 0 }\nevent go\ninitial state A { on go -> DONE }\n"
        "final state DONE\n",
        "flow d\ncontext { seen: int = 0 }\nevent go\n"
        "initial state A { on go -> DONE do seen += 1 }\nfinal state DONE\n",
    ),
    (
        "W313",
        "flow d\nevent go\ninitial state A { on go -> DONE }  # flowc: allow W3O1\n"
        "final state DONE\n",
        "flow d\nevent go\ninitial state A { on go -> DONE }  # flowc: allow W301\n"
        "final state DONE\n",
    ),
    (
        "W314",
        "flow d\nevent go\ninitial state A {\n initial state A1 { on go -> DONE }\n"
        " state A2 { on go -> DONE }\n}\nfinal state DONE\n",
        "flow d\nevent go\nevent park\ninitial state A {\n initial state A1 { on park -> A2 }\n"
        " state A2 { on go -> DONE }\n}\nfinal state DONE\n",
    ),
    (
        "W315",
        "flow d\nevent go\ninitial state A {\n initial state A1 { on go -> A1 }\n"
        " final state A2\n on done.state.A -> DONE\n}\nfinal state DONE\n",
        "flow d\nevent go\ninitial state A {\n initial state A1 { on go -> A2 }\n"
        " final state A2\n on done.state.A -> DONE\n}\nfinal state DONE\n",
    ),
    (
        "W316",
        "flow d\ncontext { n: int = 0 }\nevent go\nevent stop\ninitial parallel state P {\n"
        " state R1 { initial state A { on go -> A do n = 1 } }\n"
        " state R2 { initial state B { on go -> B do n = 2 } }\n on stop -> DONE\n}\n"
        "final state DONE\n",
        "flow d\ncontext { n: int = 0 }\nevent go\nevent stop\ninitial parallel state P {\n"
        " state R1 { initial state A { on go -> A do n = 1 } }\n"
        " state R2 { initial state B { on go -> DONE do n = 2 } }\n on stop -> DONE\n}\n"
        "final state DONE\n",
    ),
    (
        "W317",
        "flow d\ncontext { n: int = 0 }\nevent ping\nevent pong\nevent stop\n"
        "initial state A { on ping -> B do raise pong\n on stop -> DONE }\n"
        "state B { on pong -> A do n += 1; raise ping }\nfinal state DONE\n",
        "flow d\ncontext { n: int = 0 }\nevent ping\nevent pong\nevent stop\n"
        "initial state A { on ping -> B do raise pong\n on stop -> DONE }\n"
        "state B { on pong if n < 3 -> A do n += 1; raise ping }\nfinal state DONE\n",
    ),
    (
        "W318",
        "flow d\nevent go\nevent skip\ninitial state A { on go -> DONE\n on skip -> DONE }\n"
        'final state DONE\non skip reject no "no"\n',
        "flow d\nevent go\nevent skip\ninitial state A { on go -> DONE }\n"
        'final state DONE\non skip reject no "no"\n',
    ),
    (
        "W319",
        "flow d\nevent go\ninitial state A { on go -> DONE\n after 1m -> DONE\n"
        " after 2m -> DONE }\nfinal state DONE\n",
        "flow d\ncontext { n: int = 0 }\nevent go\ninitial state A { on go -> DONE\n"
        " after 1m if n < 3 -> DONE do n += 1\n after 2m -> DONE }\nfinal state DONE\n",
    ),
    (
        "W320",
        "flow d\ncontext { hidden n: int = 0 }\nevent go\ninitial state A {\n"
        ' on go if n > 0 reject no "{{ context.n }} left"\n on go -> DONE\n}\nfinal state DONE\n',
        "flow d\ncontext { hidden n: int = 0 }\nevent go\ninitial state A {\n"
        ' on go if n > 0 reject no "some left"\n on go -> DONE\n}\nfinal state DONE\n',
    ),
    (
        "W321",
        "flow d\ncontext { input a: int\n b: int }\nevent go\n"
        "initial state A { on go if a > b -> DONE }\nfinal state DONE\n",
        "flow d\ncontext { input a: int\n input b: int }\nevent go\n"
        "initial state A { on go if a > b -> DONE }\nfinal state DONE\n",
    ),
    (
        "W322",
        "flow d\nevent go(n: int)\ninitial state A {\n"
        ' on go if event.n > 1 reject no "{{ event.n + 1 }} is too many"\n on go -> DONE\n}\n'
        "final state DONE\n",
        "flow d\nevent go(n: int)\ninitial state A {\n"
        ' on go if event.n > 1 reject no "{{ event.n }} is too many"\n on go -> DONE\n}\n'
        "final state DONE\n",
    ),
    (
        "W323",
        "flow d\ninternal event tally\nevent go\n"
        "initial state A { on go -> A\n on tally -> DONE }\nfinal state DONE\n",
        "flow d\ninternal event tally\nevent go\n"
        "initial state A { on go -> A do send tally after 1s\n on tally -> DONE }\n"
        "final state DONE\n",
    ),
    (
        "W323",
        "flow d\ninternal event tally\nevent go\n"
        "initial state A { on go -> A\n on tally -> DONE }\nfinal state DONE\n",
        "flow d\ncontext { n: int = 0 }\ninternal event tally\nevent go\n"
        "initial state A { on go -> A do n += 1; if n > 1 { raise tally }\n on tally -> DONE }\n"
        "final state DONE\n",
    ),
]


def codes(source: str) -> list[str]:
    result = compile_source(source, "case.flow")
    unexpected = [d for d in result.diagnostics if not d.code[1:].startswith("3")]
    assert not unexpected, unexpected
    return [d.code for d in result.diagnostics]


@pytest.mark.parametrize(("code", "bad", "good"), CASES, ids=[c[0] for c in CASES])
def test_rule_triggers_and_fix_silences_it(code: str, bad: str, good: str) -> None:
    assert code in codes(bad)
    assert codes(good) == []


def test_every_graph_code_has_a_case() -> None:
    from flowc.compiler.diagnostics import CODES

    graph_codes = {c for c in CODES if c[1] == "3"}
    assert graph_codes == {c for c, _, _ in CASES}


@pytest.mark.parametrize("path", sorted((ROOT / "flows").glob("*.flow")), ids=lambda p: p.stem)
def test_seed_flows_pass_strict(path: Path) -> None:
    result = compile_file(path)
    assert result.diagnostics == [], [
        f"{d.code} {d.span.line}: {d.message}" for d in result.diagnostics
    ]


ENUM_CASES = """\
flow d
enum Mode { FAST, SLOW }
context { mode: Mode = FAST }
event go(kind: Mode)
initial state A {
  on go if mode == FAST -> B
  on go if SLOW == mode -> B
  on go -> C
}
state B {
  on go if event.kind == FAST -> C
  on go -> B
}
final state C
"""


def test_w305_when_earlier_guards_name_every_member_of_an_enum() -> None:
    result = compile_source(ENUM_CASES, "d.flow")
    (diag,) = result.warnings
    assert (diag.code, diag.span.line, diag.span.column) == ("W305", 8, 3)
    assert "cover every member of `Mode`" in diag.message
    # One member short (B names only FAST of the payload's enum), nothing is reported.
    assert not [d for d in result.warnings if d.span.line > 9]


def test_enum_cases_beating_a_global_rule_make_it_dead_and_w318_when_dead_everywhere() -> None:
    from flowc.compiler.lint.graph import FlowGraph
    from flowc.compiler.sourcemap import SourceMap

    source = (
        "flow d\nenum Mode { FAST, SLOW }\ncontext { mode: Mode = FAST }\nevent go\n"
        "initial state A {\n  on go if mode == FAST -> B\n}\nstate B { on go -> C }\n"
        "final state C\n"
        'on go if mode == SLOW reject slow "slow"\non go reject never "never"\n'
    )
    result = compile_source(source, "d.flow")
    # `slow` fires in A; `never` fires nowhere: each state's own rules beat it (W318).
    assert [(d.code, d.span.line) for d in result.warnings] == [("W318", 11)]
    flow = result.flow
    assert flow is not None
    graph = FlowGraph(flow, result.source, SourceMap.from_ir(flow))
    dead = {(t.source, t.code) for t in flow.transitions if t.index in graph.dead}
    # In A the state's FAST rule and the global SLOW rule leave nothing for `never`; in B the
    # state's own rule beats both global ones.
    assert dead == {("A", "never"), ("B", "slow"), ("B", "never")}


# A compound's initial rule and a history's default run actions on entry, as entry actions do:
# what they write or send counts as used.
INITIAL_ACTION_FLOWS = {
    "initial rule": "flow d\ncontext { n: int = 0 }\nevent go\ninternal event tally\n"
    "initial state Off { on go -> On }\nstate On {\n  initial -> A do ACTIONS\n"
    "  initial state A { on tally -> B }\n  state B { on go -> DONE }\n}\nfinal state DONE\n",
    "history default": "flow d\ncontext { n: int = 0 }\nevent go\nevent pause\n"
    "internal event tally\ninitial state Off { on go -> H }\nstate On {\n"
    "  history H -> B do ACTIONS\n  initial state A { on go -> DONE }\n"
    "  state B { on tally -> A }\n  on pause -> Off\n}\nfinal state DONE\n",
}


@pytest.mark.parametrize("where", sorted(INITIAL_ACTION_FLOWS))
def test_initial_actions_write_fields_and_send_internal_events(where: str) -> None:
    source = INITIAL_ACTION_FLOWS[where]
    assert codes(source.replace("ACTIONS", "n = 1; raise tally")) == []
    assert codes(source.replace("ACTIONS", "n = 1; send tally after 1s")) == []
    # Without them, both are reported: the walk does look at these actions.
    assert sorted(codes(source.replace(" do ACTIONS", ""))) == ["W312", "W323"]


@pytest.mark.parametrize("where", sorted(INITIAL_ACTION_FLOWS))
def test_initial_actions_constant_if_guard_w309(where: str) -> None:
    source = INITIAL_ACTION_FLOWS[where]
    assert codes(source.replace("ACTIONS", "if true { n = 1 }; raise tally")) == ["W309"]
