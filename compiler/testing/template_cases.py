"""Template cases: lowered templates with values and the text Jinja2 renders from them
(`template_cases.json` beside the vectors), so that a renderer of lowered templates in another
language (runtime-ts/src/template.ts) is checked against Jinja2 itself, case by case.

The values of each lowered template are made from what it reads (the members it names, the
lists it loops over), once per leaf value: each string literal of the template, so that every
branch comparing with one is taken, and a few values of other types. `RULE_CASES` add the
corner cases of the rules of docs/ir.md ("Lowered templates") one by one.

In the file, the event is written `{"$event": NAME, "payload": {...}}` and the time
`{"$time": EPOCH_MS}`; everything else is JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from flowc.runtime.clock import ms_to_datetime, to_ms
from flowc.runtime.templating import EventVars, TemplateCache, wrap

FORMAT = "flowc.template-cases/1"


def jinja_text(source: str, variables: Mapping[str, Any]) -> str | None:
    """What the runtime's Jinja2 renders (None: the template fails)."""
    try:
        return TemplateCache().render(source, variables)
    except Exception:
        return None


def cases_data(forms: Mapping[str, Any]) -> dict[str, Any]:
    """The cases of every lowered form (source -> parts) and the rule cases, as written."""
    from flowc.compiler.template_lowering import lower

    found: list[dict[str, Any]] = []
    pairs = [(s, p, v) for s, p in sorted(forms.items()) if p is not None for v in variables_for(p)]
    pairs += [(s, lower(s), v) for s, v in RULE_CASES]
    for source, parts, variables in pairs:
        encoded = encode(variables)
        try:
            json.dumps(encoded, allow_nan=False)
        except ValueError:
            continue  # an infinite float: JSON cannot carry it
        found.append(
            {
                "source": source,
                "parts": parts,
                "variables": encoded,
                "text": jinja_text(source, variables),
            }
        )
    return {"format": FORMAT, "cases": found}


def encode(value: Any) -> Any:
    if isinstance(value, EventVars):
        return {"$event": str(value), "payload": encode(dict(dict.items(value)))}
    if isinstance(value, datetime):
        return {"$time": to_ms(value)}
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in dict(value).items()}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    """The values `encode` wrote, as the runtime gives them to Jinja2."""
    if isinstance(value, dict):
        if "$event" in value:
            return EventVars(value["$event"], decode(value["payload"]))
        if "$time" in value:
            return ms_to_datetime(value["$time"])
        return wrap({k: decode(v) for k, v in value.items()})
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


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


def variables_for(parts: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
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


NOW = datetime(2025, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)

#: (template, variables): each rule of the docs on its own.
RULE_CASES: list[tuple[str, dict[str, Any]]] = [
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
