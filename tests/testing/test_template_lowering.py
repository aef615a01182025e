"""Lowered templates (docs/ir.md, "Lowered templates"): for every template of every flow the
vectors are made from, rendering its lowered form with the reference renderer gives exactly
what Jinja2 gives on the same values; the rules' corner cases one by one; what stays outside
the subset (W322); and the IR member changes no hash and no old document."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.compiler.driver import compile_file
from flowc.compiler.template_lowering import NotLowered, default_messages, lower
from flowc.compiler.template_render import RenderError, render
from flowc.compiler.testing.template_cases import RULE_CASES, decode, variables_for
from flowc.runtime import FakeClock, Machine
from flowc.runtime.messages import DEFAULT_MESSAGES
from flowc.runtime.model import CompiledFlow, IRLoadError
from flowc.runtime.templating import EventVars, TemplateCache, TemplateError, wrap

ROOT = Path(__file__).parents[2]
VECTORS = ROOT / "runtime-ts" / "test" / "vectors"

_ORIGINAL = TemplateCache.render
Seen = list[tuple[str, dict[str, Any], str | None]]


def _jinja(source: str, variables: dict[str, Any]) -> str | None:
    """What the runtime's Jinja2 renders (None: the template fails)."""
    try:
        return _ORIGINAL(TemplateCache(), source, variables)
    except Exception:
        return None


def _reference(parts: list[dict[str, Any]], variables: dict[str, Any]) -> str | None:
    try:
        return render(parts, variables)
    except RenderError:
        return None


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> Iterator[Seen]:
    """Every (source, variables, text) the runtime renders while the test runs."""
    seen: Seen = []

    def spy(cache: TemplateCache, source: str, variables: dict[str, Any]) -> str:
        try:
            text = _ORIGINAL(cache, source, variables)
        except Exception:
            seen.append((source, dict(variables), None))
            raise
        seen.append((source, dict(variables), text))
        return text

    monkeypatch.setattr(TemplateCache, "render", spy)
    yield seen


def _replay_everything(data: dict[str, Any]) -> None:
    """Every vector's operations, with each named template rendered after each of them (hosts
    render those; the values they pass are stood in for by their names)."""
    machine = Machine.from_json(json.dumps(data["ir"]))
    extra = {"mode_instructions": "<mode>", "artifact_description": "<a>", "mode_reminder": ""}
    for vector in data["vectors"]:
        clock = FakeClock(vector["now"] / 1000)
        instance = machine.try_start(vector["context"], clock=clock)
        if not hasattr(instance, "send"):
            continue
        for op in [{"op": "start"}, *vector["ops"]]:
            if op["op"] == "send":
                outcome = instance.send(op["event"], op["payload"])
                outcome.to_dict()  # the message is rendered when read
            elif op["op"] == "goto":
                instance.goto(op["target"], force=op["force"]).to_dict()
            elif op["op"] == "back":
                instance.back(force=op["force"]).to_dict()
            elif op["op"] == "advance":
                clock.ms += op["ms"]
                for outcome in instance.advance():
                    outcome.to_dict()
            for name in machine.templates:
                with contextlib.suppress(TemplateError):  # recorded as failing: compared too
                    instance.render(name, **extra)


def _lowered_forms() -> dict[str, Any]:
    forms: dict[str, Any] = {m["source"]: m["parts"] for m in default_messages().values()}
    for path in sorted(VECTORS.glob("*.vectors.json")):
        forms.update(
            json.loads(path.read_text(encoding="utf-8"))["ir"].get("lowered_templates", {})
        )
    return forms


def test_every_template_the_flows_render_renders_the_same_lowered(renders: Seen) -> None:
    for path in sorted(VECTORS.glob("*.vectors.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        _replay_everything(data)
        # Journals are rendered when read: read each step's.
    forms = _lowered_forms()
    compared: set[str] = set()
    for source, variables, text in renders:
        if source not in forms:  # no markup: the text is the source
            assert text == source
            continue
        parts = forms[source]
        assert parts is not None, f"not lowered: {source!r}"
        assert _reference(parts, variables) == text, source
        compared.add(source)
    assert len(compared) >= 10 and len(renders) > 300


def test_every_lowered_template_renders_as_jinja_on_values_for_each_branch() -> None:
    forms = _lowered_forms()
    count = 0
    for source, parts in sorted(forms.items()):
        assert parts is not None, f"not lowered: {source!r}"
        for variables in variables_for(parts):
            assert _reference(parts, variables) == _jinja(source, variables), (source, variables)
            count += 1
    assert count > 100


def test_journals_render_the_same_lowered() -> None:
    # Journals of every accepted step of every vector, rebuilt from the recorded lines' values.
    forms = _lowered_forms()
    checked = 0
    for path in sorted(VECTORS.glob("*.vectors.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        machine = Machine.from_json(json.dumps(data["ir"]))
        for journal in data["ir"].get("journals", []):
            parts = forms.get(journal["template"])
            for vector in data["vectors"]:
                for op in vector["ops"]:
                    expects = op["expect"] if op["op"] == "advance" else [op["expect"]]
                    for expect in expects:
                        if "journals" not in expect:
                            continue
                        line = expect["line"]
                        at = datetime.fromisoformat(line["at"])
                        event = line.get("event")
                        variables = {
                            "seq": line["seq"],
                            "at": at,
                            "kind": line["kind"],
                            "source": line["from"],
                            "target": line["to"],
                            "event": EventVars(event, line["payload"]) if event else None,
                            "payload": wrap(line["payload"]),
                            "reason": line["reason"],
                            "via": line["via"],
                            "state": wrap(machine.states[line["to"]].view()),
                            "context": wrap(expect["context"]),
                        }
                        want = expect["journals"][journal["name"]]
                        got = render(parts, variables) if parts is not None else journal["template"]
                        assert got == want
                        checked += 1
    assert checked > 100


def test_every_default_message_is_lowered() -> None:
    lowered = default_messages()
    assert set(lowered) == set(DEFAULT_MESSAGES)
    values = {"event": EventVars("go", {}), "state": wrap({"name": "A", "title": "A", "meta": {}})}
    values |= {"from": "A", "to": "B", "invariants": ["x", "y"], "issue_count": 2}
    values |= {"where": "a guard", "detail": "division by zero", "argument": "a", "problem": "p"}
    for kind, found in lowered.items():
        assert render(found["parts"], values) == _jinja(found["source"], values), kind


def test_the_committed_template_cases_render_the_same_with_the_reference() -> None:
    data = json.loads((VECTORS / "template_cases.json").read_text(encoding="utf-8"))
    assert data["format"] == "flowc.template-cases/1"
    for case in data["cases"]:
        variables = decode(case["variables"])
        assert _reference(case["parts"], variables) == case["text"], case["source"]
        assert _jinja(case["source"], variables) == case["text"], case["source"]
    assert len(data["cases"]) > 150
    assert sum(case["text"] is None for case in data["cases"]) >= 5  # failures agree too


@pytest.mark.parametrize(("source", "variables"), RULE_CASES)
def test_a_rule_renders_as_jinja_does(source: str, variables: dict[str, Any]) -> None:
    assert _reference(lower(source), variables) == _jinja(source, variables)


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("{{ a + 1 }}", "`+`"),
        ("{{ a | title }}", "`title`"),
        ("{% set x = 1 %}{{ x }}", "set"),
        ("{% if 1 < a < 3 %}x{% endif %}", "chained"),
        ("{{ range(3) }}", "call"),
        ("{{ a is defined }}", "`is`"),
        ("{{ a.strip() }}", "call"),
        ("{{ at.strftime('%A') }}", "%Y"),
        ("{% for x in xs if x %}{% endfor %}", "`if`"),
        ("{{ a[1:2] }}", "a:b"),
        ("{% for x in xs %}{{ loop.cycle('a', 'b') }}{% endfor %}", "call"),
        ("{% for x in xs %}{{ loop.depth }}{% endfor %}", "`loop.depth`"),
        ("{% for x in xs %}{{ loop }}{% endfor %}", "`loop` is in the subset only"),
        ("{% for loop in xs %}{% endfor %}", "named `loop`"),
        ("{{ ", "parse"),
    ],
)
def test_what_is_outside_the_subset_is_not_lowered(source: str, why: str) -> None:
    with pytest.raises(NotLowered, match=re.escape(why)):
        lower(source)


FLOW = """flow demo
context { n: int = 0 }
event go(n: int)
journal log "{{ event }} -> {{ target }}"
template plain "Just text"
template ends "Text with a line break\\n"
initial state A {
  on go if event.n > 5 reject too_many "{{ event.n * 2 }} is too many"
  on go if event.n > 1 reject many "{{ event.n }} is many"
  on go -> DONE
}
final state DONE
"""


def test_the_ir_carries_the_lowered_forms_and_w322_for_the_rest() -> None:
    result = compile_source(FLOW, "demo.flow")
    assert result.flow is not None and not result.errors
    lowered = result.flow.lowered_templates
    assert lowered["{{ event.n * 2 }} is too many"] is None
    assert lowered["{{ event.n }} is many"] == [
        {"print": {"op": "attr", "value": "n", "args": [{"op": "var", "value": "event"}]}},
        {"text": " is many"},
    ]
    assert "Just text" not in lowered  # renders as itself
    assert lowered["Text with a line break\n"] == [{"text": "Text with a line break"}]
    w322 = [d for d in result.diagnostics if d.code == "W322"]
    assert [(d.span.line, d.span.column) for d in w322] == [(8, 40)]
    assert "`*` is not in the subset" in w322[0].message


def test_the_member_changes_no_hash_and_old_documents_load() -> None:
    flow = compile_file(ROOT / "flows" / "stage_questions.flow").flow
    assert flow is not None and flow.lowered_templates
    data = json.loads(flow.to_json())
    golden = json.loads((ROOT / "tests" / "golden" / "stage_questions.json").read_text())
    assert data["hash"] == golden["hash"]
    # A document written before the member existed: same hash, loads and runs.
    old = dict(data)
    del old["lowered_templates"]
    assert CompiledFlow.from_json(json.dumps(old)).hash == flow.hash
    context = {"solution_id": "s"}
    machine = Machine.from_json(json.dumps(old))
    assert machine.start(context).state == "required"
    # And one with it loads in the runtime (which never reads it).
    assert Machine.from_json(flow.to_json()).start(context).state == "required"
    # Its outline is checked like every member's.
    with pytest.raises(IRLoadError, match="lowered_templates"):
        Machine.from_json(json.dumps(dict(data, lowered_templates={"x": "not parts"})))
    # The hash does not cover it: an edit of it alone leaves the hash valid.
    edited = dict(data, lowered_templates={})
    assert CompiledFlow.from_json(json.dumps(edited)).compute_hash() == flow.hash
