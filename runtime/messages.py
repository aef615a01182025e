"""Rejection kinds and their default message templates.

Each kind is a stable string that hosts can switch on; the text is a sandboxed Jinja2 template
that a flow may replace with `message KIND "..."`. The compiler checks `message` kinds against
`MESSAGE_KINDS`, so this table is part of the public contract (docs/runtime.md).
"""

from __future__ import annotations

#: kind -> default template. Variables available to every template: `state` (name, title, meta),
#: `event` (the event name, or None), plus the kind's own variables named in docs/runtime.md.
DEFAULT_MESSAGES: dict[str, str] = {
    "invalid_payload": "Invalid payload for '{{ event }}': {{ issue_count }} issue(s).",
    "invalid_context": "Invalid context: {{ issue_count }} issue(s).",
    "unknown_event": "Unknown event '{{ event }}'.",
    "internal_event": "Event '{{ event }}' is internal: only the flow itself may send it.",
    "event_not_accepted": "Event '{{ event }}' is not accepted in state '{{ state.name }}'.",
    "ignored": "Event '{{ event }}' was ignored in state '{{ state.name }}'.",
    "guard_failed": (
        "{% if event %}No rule for '{{ event }}' in state '{{ state.name }}' has a guard that"
        " holds.{% else %}The edge from '{{ from }}' to '{{ to }}' is closed: its guard does not"
        " hold.{% endif %}"
    ),
    "unknown_state": "Unknown state '{{ to }}'.",
    "unknown_child": "The instance has no child '{{ child }}'.",
    "invalid_transition": "Cannot go from '{{ from }}' to '{{ to }}'.",
    "backward_requires_force": "Going back from '{{ from }}' to '{{ to }}' needs force.",
    "no_previous_state": "There is no earlier state to go back to from '{{ state.name }}'.",
    "instance_final": "The instance has finished in state '{{ state.name }}'.",
    "routing_loop": "Routing from '{{ state.name }}' went round in a loop.",
    "expression_error": "Could not evaluate {{ where }}: {{ detail }}.",
    "limit_exceeded": "The step went past a limit in {{ where }}: {{ detail }}.",
    "invalid_argument": "The {{ argument }} given is not allowed: {{ problem }}.",
    "conflict": "The instance was changed by someone else; try again.",
    "invariant_violated": (
        "The step was refused: it would break the invariant {{ invariants | join(', ') }}."
    ),
}

MESSAGE_KINDS: frozenset[str] = frozenset(DEFAULT_MESSAGES)
