"""Rejection message cases for the TypeScript runtime: the message the Python runtime gives a
refusal (`Machine.rejection(...).message`: the flow's template or the kind's default, rendered
by Jinja2, stripped, falling back to the default and then to the kind when rendering fails),
for every kind, with default and custom templates, in states with titles and meta. Written to
runtime-ts/test/fixtures/message_cases.json with the flow's `messages` and
`lowered_templates`; runtime-ts/test/message_cases.test.ts replays them through
src/rejections.ts:

    .venv/bin/python tests/ts/make_message_cases.py

tests/ts/test_expr_cases.py checks that the committed file is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flowc.compiler import compile_source
from flowc.compiler.template_lowering import NotLowered, lower
from flowc.runtime import Machine
from flowc.runtime.messages import DEFAULT_MESSAGES

OUT = (
    Path(__file__).resolve().parents[2] / "runtime-ts" / "test" / "fixtures" / "message_cases.json"
)

FLOW = '''flow notes
message invalid_transition "Cannot go from '{{ from }}' to '{{ to }}' yet ({{ state.title }})."
message event_not_accepted """
  '{{ event }}' does not apply to the {{ state.title }} step
  {%- if payload.k %} (k={{ payload.k }}){% endif %}.
"""
message guard_failed "{{ missing.member }} fails, so the default is used"
message instance_final "Done in {{ state.meta.panel | upper }} with {{ context.n }} notes."
context { n: int = 2 }
event go(k: str = "")
initial state Draft "Draft the note" {
  meta { panel: "left", step: 1 }
  on go -> Review
}
state Review {
  on go -> Draft
}
'''

TEMPLATES: list[str | None] = [
    None,
    "plain text, no markup  ",
    "{{ code }}: {{ event.k or 'nothing' }} in {{ state.name }} with {{ limit }}",
    "{% for k in context %}{{ k }}={{ context[k] }}{% endfor %}",
    "{{ 1 < 'a' }}",
]

KINDS_DATA: dict[str, dict[str, Any]] = {
    "invalid_payload": {"issue_count": 3, "issues": {"invalid": [], "missing": [], "unknown": []}},
    "invalid_context": {"issue_count": 1},
    "unknown_event": {},
    "event_not_accepted": {"expected": ["go"]},
    "ignored": {},
    "guard_failed": {"from": "Draft", "to": "Review"},
    "unknown_state": {"to": "Nowhere"},
    "invalid_transition": {"from": "Draft", "to": "Review"},
    "backward_requires_force": {"from": "Review", "to": "Draft"},
    "no_previous_state": {},
    "instance_final": {},
    "routing_loop": {},
    "expression_error": {"where": "the guard of go", "detail": "division by zero"},
    "limit_exceeded": {"where": "the actions", "detail": "too big"},
    "invalid_argument": {"argument": "reason", "problem": "too long"},
    "invariant_violated": {"invariants": ["a", "b"]},
}


def _flow() -> dict[str, Any]:
    flow = compile_source(FLOW, "notes.flow").flow
    assert flow is not None
    return dict(flow.model_dump(mode="json"))


def cases(raw: dict[str, Any]) -> list[dict[str, Any]]:
    machine = Machine(raw)
    out = []
    steps = [
        ("Draft", "go", {"k": "x"}),
        ("Review", None, None),
        ("Draft", "go", {}),
    ]
    for kind, data in KINDS_DATA.items():
        assert kind in DEFAULT_MESSAGES
        for state, event, payload in steps:
            context = {"n": 2}
            rejection = machine.rejection(
                kind, machine.states[state], event, payload, context, data
            )
            case = {"kind": kind, "state": state, "event": event, "payload": payload}
            out.append({**case, "context": context, "data": data, "message": rejection.message})
    for template in TEMPLATES[1:]:
        for state, event, payload in steps:
            rejection = machine.rejection(
                "reject", machine.states[state], event, payload, {"n": 2}, {"limit": 3},
                code="too_many", template=template,
            )  # fmt: skip
            case = {"kind": "reject", "code": "too_many", "template": template, "state": state}
            case |= {"event": event, "payload": payload, "context": {"n": 2}, "data": {"limit": 3}}
            out.append({**case, "message": rejection.message})
    return out


def build() -> str:
    raw = _flow()
    lowered = dict(raw.get("lowered_templates") or {})
    for template in TEMPLATES[1:]:
        assert template is not None
        try:
            lowered[template] = lower(template)
        except NotLowered:
            lowered[template] = None
    states = {s["name"]: {"title": s.get("title"), "meta": s.get("meta")} for s in raw["states"]}
    document = {
        "messages": raw.get("messages") or {},
        "lowered_templates": lowered,
        "states": states,
        "cases": cases(raw),
    }
    return json.dumps(document, ensure_ascii=False, indent=0) + "\n"


def main() -> int:
    from cases_file import write_cases  # beside this script, which runs from its folder

    return write_cases(OUT, build())


if __name__ == "__main__":
    sys.exit(main())
