"""Template cases for the TypeScript runtime: each template of the lowered subset (the default
rejection messages and templates using every part, expression and filter of docs/ir.md,
"Lowered templates"), lowered by the compiler, with the text Jinja2 renders in the Python
runtime for a few sets of variables (or that it fails). Written to
runtime-ts/test/fixtures/template_cases.json, which runtime-ts/test/template_cases.test.ts
replays through src/template.ts:

    .venv/bin/python tests/ts/make_template_cases.py

In the file, the event is `{"$event": NAME, "payload": {...}}` and a journal's time
`{"$time": MS}`. tests/ts/test_expr_cases.py checks that the committed file is current.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flowc.compiler.template_lowering import default_messages, lower
from flowc.runtime.templating import EventVars, TemplateCache, TemplateError, wrap

OUT = (
    Path(__file__).resolve().parents[2] / "runtime-ts" / "test" / "fixtures" / "template_cases.json"
)

TEMPLATES = [
    "Hello {{ name }}!",
    "{{ n }} {{ f }} {{ big }} {{ none }} {{ t }} {{ xs }} {{ m }} {{ s }}",
    "{% if n > 2 %}big{% elif n == 2 %}two{% else %}small{% endif %}",
    "{% for x in xs %}{{ loop.index }}:{{ x }}{% if not loop.last %}, {% endif %}"
    "{% else %}none{% endfor %}",
    "{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
    "{{ loop.length }}{% endfor %}",
    "{% for k in m %}{{ k }}={{ m[k] }};{% endfor %}{% for c in s %}[{{ c }}]{% endfor %}",
    "{{ xs | join(', ') }} {{ xs | length }} {{ s | upper }} {{ s | lower }} {{ pad | trim }}",
    "{{ m | join }} {{ s | length }} {{ m | length }} {{ n | upper }}",
    "{{ m | tojson }} {{ xs | tojson }} {{ s | tojson }} {{ f | tojson }}",
    "{{ event }} {{ event.k }} {{ event == 'go' }} {{ event != 'no' }} {{ payload.k }}",
    "{{ missing }}|{{ missing | length }}|{{ 'a' ~ n ~ none ~ f ~ xs }}",
    "{{ at }} {{ at.isoformat() }} {{ at.strftime('%Y/%m/%d %H:%M:%S %%') }}",
    "{{ xs[0] }} {{ xs[-1] }} {{ xs[9] }} {{ s[1] }} {{ m.a }} {{ m['b'] }}",
    "{{ n if n > 1 }}|{{ 'y' if t else 'n' }}|{{ n and s }}|{{ none or 'dflt' }}",
    "{{ 'a' in s }} {{ 1 in xs }} {{ 'a' in m }} {{ 'zz' not in m }} {{ n == 2.0 }}",
    "{{ missing.x }}",
    "{{ n < 'a' }}",
    "{{ missing | upper }}|{{ missing | trim }}|{{ missing | lower }}",
    "{{ missing | join(',') }}|{% for x in missing %}a{% else %}b{% endfor %}|{{ missing ~ 'x' }}",
    "{{ missing | tojson }}",
    "{{ missing == none }}|{{ missing != 1 }}|{{ not missing }}|{{ missing in xs }}",
    "{{ [1, 'a', none, true, 2.5] }} {{ s < 'b' }} {{ n >= 2 }}",
    "{%- if n %}\n  x {{ n }}\n{%- endif %}\n",
    "{# a comment #}text\nand more\n",
    "{{ f }} {{ -1 }} {{ 1.5e300 }} {{ 0.1 }}",
    "{% for x in xs %}{% for y in xs %}{{ x }}{{ y }} {% endfor %}{% endfor %}",
    "{{ state.name }} / {{ state.title }} / {{ context.n }} / {{ code }}",
]

VARIABLE_SETS: list[dict[str, Any]] = [
    {
        "name": "Ada", "n": 3, "f": 2.0, "big": 10**25, "none": None, "t": True,
        "xs": [1, "two", None], "m": {"a": 1, "b": [2.5]}, "s": "héllo 😀", "pad": "  x \t",
        "event": {"$event": "go", "payload": {"k": "v"}}, "payload": {"k": "v"},
        "at": {"$time": 1735689600000}, "state": {"name": "Draft", "title": "Draft", "meta": {}},
        "context": {"n": 1}, "code": "too_big",
    },
    {
        "name": "Ünïcode 'q'", "n": 2, "f": 0.1, "big": -7, "none": None, "t": False,
        "xs": [], "m": {}, "s": "a\"b'c\n", "pad": "\u3000y\x85",
        "event": {"$event": "other", "payload": {}}, "payload": {},
        "at": {"$time": 1735689600123}, "state": {"name": "B", "title": "Bee", "meta": {"x": 1}},
        "context": {"n": 2.5}, "code": "event_not_accepted",
    },
    {
        "name": "", "n": 0, "f": -1.5e-7, "big": 0, "none": None, "t": True,
        "xs": [{"k": 1}, [2], "<&>"], "m": {"a": None, "z": True}, "s": "", "pad": "",
        "event": None, "payload": {}, "at": {"$time": 0}, "state": {"name": "C", "title": "C"},
        "context": {}, "code": "x",
    },
]  # fmt: skip


#: The refusal data the default messages read, beside each set.
EXTRA = {
    "from": "A", "to": "B", "issue_count": 2, "where": "the guard", "detail": "x",
    "argument": "reason", "problem": "p", "invariants": ["a", "b"],
}  # fmt: skip
VARIABLES = [{**EXTRA, **v} for v in VARIABLE_SETS]


def _jinja_value(v: Any) -> Any:
    if isinstance(v, dict) and "$event" in v:
        return EventVars(v["$event"], v["payload"])
    if isinstance(v, dict) and "$time" in v:
        return datetime.fromtimestamp(v["$time"] / 1000, tz=UTC)
    return wrap(v)


def _rendered(source: str, variables: dict[str, Any]) -> dict[str, Any]:
    given = {k: _jinja_value(v) for k, v in variables.items()}
    try:
        return {"text": TemplateCache().render(source, given)}
    except TemplateError:
        return {"error": True}


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    sources = [m["source"] for m in default_messages().values()] + TEMPLATES
    for source in sources:
        parts = lower(source)
        for i, variables in enumerate(VARIABLES):
            case = {"source": source, "parts": parts, "variables": i}
            out.append({**case, **_rendered(source, variables)})
    return out


def build() -> str:
    document = {"variables": VARIABLES, "cases": cases()}
    return json.dumps(document, ensure_ascii=False, indent=0) + "\n"


def main() -> int:
    from cases_file import write_cases  # beside this script, which runs from its folder

    return write_cases(OUT, build())


if __name__ == "__main__":
    sys.exit(main())
