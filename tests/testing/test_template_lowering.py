"""Lowered templates (docs/ir.md, "Lowered templates"): for every template of every flow the
vectors are made from, rendering its lowered form with the reference renderer gives exactly
what Jinja2 gives on the same values; the rules' corner cases one by one; what stays outside
the subset (W322); and the IR member changes no hash and no old document."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.compiler.driver import compile_file
from flowc.compiler.template_lowering import NotLowered, default_messages, lower
from flowc.compiler.template_render import RenderError, render
from flowc.runtime import FakeClock, Machine
from flowc.runtime.messages import DEFAULT_MESSAGES
from flowc.runtime.model import CompiledFlow
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


def _shapes(parts: list[dict[str, Any]], roots: dict[str, Any], where: dict[str, Any]) -> None:
    """The variables the parts read, as nested shapes: a map's members by name, `[]` for a
    list's items (what a `for` loops over)."""

    def node(expr: dict[str, Any]) -> dict[str, Any] | None:
        op, args = expr["op"], expr.get("args", [])
        if op == "var":
            found: dict[str, Any] = roots.setdefault(expr["value"], {})
            return found
        if op == "local":
            return where.get(expr["value"])
        if op in ("attr", "index"):
            owner = node(args[0])
            key = expr.get("value") if op == "attr" else args[1].get("value")
            for arg in args[1:]:
                node(arg)
            return owner.setdefault(key, {}) if owner is not None and key is not None else None
        for arg in args:
            node(arg)
        return None

    for part in parts:
        if "print" in part:
            node(part["print"])
        elif "if" in part:
            for branch in part["if"]:
                node(branch["test"])
                _shapes(branch["then"], roots, where)
            _shapes(part["else"], roots, where)
        elif "for" in part:
            listed = node(part["in"])
            item = listed.setdefault("[]", {}) if listed is not None else {}
            _shapes(part["body"], roots, {**where, part["for"]: item, "loop": {}})
            _shapes(part["else"], roots, where)


def _literals(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        if value.get("op") == "lit" and isinstance(value.get("value"), str):
            yield value["value"]
        for v in value.values():
            yield from _literals(v)
    elif isinstance(value, list):
        for v in value:
            yield from _literals(v)


def _value(shape: dict[str, Any], leaf: Any) -> Any:
    if "[]" in shape:
        return [_value(shape["[]"], leaf), _value(shape["[]"], leaf)]
    if shape:
        return wrap({str(k): _value(v, leaf) for k, v in shape.items()})
    return leaf


def _variables(parts: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Values for every variable the parts read: one set per leaf value (each string literal
    of the template, so that each branch comparing with one is taken, and a few others)."""
    roots: dict[str, Any] = {}
    _shapes(parts, roots, {})
    for leaf in [*sorted(set(_literals(parts))), "x", 2, 0.5, None, True, ["a", 1]]:
        variables = {name: _value(shape, leaf) for name, shape in roots.items()}
        if "event" in roots:
            payload = _value(roots["event"], leaf) if roots["event"] else {}
            variables["event"] = EventVars("ev", payload if isinstance(payload, dict) else {})
        if "at" in roots:
            variables["at"] = NOW
        yield variables


def test_every_lowered_template_renders_as_jinja_on_values_for_each_branch() -> None:
    forms = _lowered_forms()
    count = 0
    for source, parts in sorted(forms.items()):
        assert parts is not None, f"not lowered: {source!r}"
        for variables in _variables(parts):
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


NOW = datetime(2025, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)

#: (template, variables): each rule of the docs on its own.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("{{ x }}", {"x": None}),
    ("{{ x }}|{{ y }}", {"x": True, "y": False}),
    ("{{ x }} {{ y }} {{ z }} {{ w }}", {"x": 1.0, "y": 0.1, "z": 1e16, "w": 3}),
    ("{{ x }}", {"x": float("inf")}),
    ("{{ x }}", {"x": ["a", 1, None, True, 2.5, {"k": "v"}]}),
    ("{{ x }}", {"x": {"a": [1], "b": "it's", "c": 'say "hi"', "d": "both ' \""}}),
    ("{{ x }}", {"x": ["tab\there", "line\nbreak", "back\\slash", "\x01", "é"]}),
    ("{{ missing }}[{{ missing | length }}]", {}),
    (
        "{{ x.y }}|{{ x['y'] }}|{{ x.z }}|{{ xs[1] }}|{{ xs[-1] }}|{{ xs[5] }}",
        {"x": {"y": 2}, "xs": [1, 2, 3]},
    ),
    ("{{ a or 'b' }}|{{ a and 'b' }}|{{ c or 'd' }}|{{ c and 'd' }}", {"a": "", "c": "x"}),
    ("{{ not a }}|{{ not c }}|{{ 0 or [] }}", {"a": [], "c": {"k": 1}}),
    (
        "{% if a == 1.0 %}eq{% endif %}{% if b == 1 %}t{% endif %}"
        "{% if l == [1, 'x'] %}L{% endif %}",
        {"a": 1, "b": True, "l": [1, "x"]},
    ),
    (
        "{{ 'x' in s }}{{ 'k' in m }}{{ 2 in l }}{{ 3 not in l }}",
        {"s": "axb", "m": {"k": 1}, "l": [1, 2]},
    ),
    ("{{ a < b }}{{ s >= t }}", {"a": 1, "b": 2.5, "s": "b", "t": "a"}),
    ("{{ a < b }}", {"a": 1, "b": "x"}),
    ("{{ 'x' ~ n ~ none ~ f }}", {"n": 3, "f": 1.5}),
    ("{{ 'yes' if a }}|{{ 'yes' if b else 'no' }}", {"a": 0, "b": 0}),
    ("{{ x | tojson }}", {"x": {"b": "<é>&'", "a": [1.0, None, True], "c": "\U0001f600"}}),
    ("{{ xs | join(', ') }}|{{ xs | join }}|{{ xs | length }}", {"xs": [1, "a", None, 2.5]}),
    ("{{ s | lower }}{{ s | upper }}[{{ p | trim }}]", {"s": "MiXed", "p": "  pad \n"}),
    (
        "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
        "{{ loop.last }}{{ loop.length }}{{ x }};{% else %}none{% endfor %}",
        {"xs": ["a", "b", "c"]},
    ),
    ("{% for x in xs %}{{ x }}{% else %}none{% endfor %}", {"xs": []}),
    ("{% for k in m %}{{ k }}={{ m[k] }} {% endfor %}", {"m": {"b": 1, "a": 2}}),
    (
        "{% for x in xs %}{% for x in x %}{{ x }}{{ loop.length }}{% endfor %}"
        "|{{ loop.index }}{% endfor %}",
        {"xs": [[1, 2], [3]]},
    ),
    ("{{ at }}|{{ at.isoformat() }}|{{ at.strftime('%Y/%m/%d %H:%M:%S %%') }}", {"at": NOW}),
    ("{{ at }}", {"at": NOW.replace(microsecond=0)}),
    (
        "{{ event }} {{ event.n }} {{ event == 'go' }} {{ event != 'stop' }}"
        "{% if event %}!{% endif %}",
        {"event": EventVars("go", {"n": 1})},
    ),
    ("{{ missing.field }}", {}),
    (
        "{{ state.title }} {{ state.meta.skill }}",
        {"state": wrap({"name": "A", "title": "T", "meta": {"skill": "s"}})},
    ),
    ("  {%- if a -%}  \n  x  \n  {%- endif -%}  \nend\n", {"a": True}),
    ("line\r\nend\n", {}),
    ("{# a comment #}text", {}),
]


@pytest.mark.parametrize(("source", "variables"), CASES)
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
    # The hash does not cover it: an edit of it alone leaves the hash valid.
    edited = dict(data, lowered_templates={})
    assert CompiledFlow.from_json(json.dumps(edited)).compute_hash() == flow.hash
