"""A flow as tools for an LLM: definitions in the shapes of MCP, OpenAI and Anthropic.

A flow becomes a fixed set of tools, named so that a model reads them easily:

- one per event, named for the event: the payload's fields are its arguments, next to
  `instance_id` (the handle of the instance to act on) and an optional `request_id` (a retried
  call with the same id runs once);
- `start` (the initial context as `context`; its result carries the new `instance_id`),
  `status` and `history`;
- `goto` where the flow has direct edges (`-> TARGET`), `back` where it has backward ones.

With several flows, every name is prefixed with the flow's name (`collab_skills_complete_skill`).
The set never depends on an instance's state: MCP asks that `tools/list` not vary, and several
clients ignore list changes anyway. What an instance accepts now comes back in every result
(`flowc.runtime.tool_calls`); `FlowTools.for_instance` gives the per-state subset for hosts
that build their own prompts and gate tools themselves (seed 003).

OpenAI's strict mode wants every property required, `additionalProperties: false` on every
object and no `default`; `strict_schema` rewrites a schema that way (a field with a default
becomes nullable, null meaning "the default"; a map becomes a list of `{key, value}` entries)
and `from_strict` turns arguments written against it back into the payload the flow declares.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from flowc.runtime.instance import Instance
from flowc.runtime.machine import Machine

ToolOp = Literal["start", "status", "history", "event", "goto", "back"]

#: The arguments every tool on an instance takes besides its own.
HANDLE = "instance_id"
REQUEST_ID = "request_id"
FORCE = "force"
_FORCE_ARGUMENT: dict[str, Any] = {
    "type": "boolean",
    "default": False,
    "description": "true to move along a backward edge (a step back in the process); without "
    "it backward moves are refused.",
}
#: Tools that only read: always allowed on an existing instance, so never listed as "allowed".
READ_OPS: frozenset[str] = frozenset({"status", "history"})

_HANDLE_SCHEMA = {
    "type": "string",
    "description": "The instance to act on: the instance_id that `start` returned.",
}
_REQUEST_ID_SCHEMA = {
    "type": "string",
    "description": "Optional. An id for this call: a retry with the same request_id runs once "
    "and returns the first result.",
}


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: its name, what it does (`op`, and `event` for event tools), a description for
    the model and the JSON Schema of its arguments."""

    name: str
    flow: str
    op: ToolOp
    description: str
    input_schema: dict[str, Any]
    event: str | None = None
    #: An event tool whose event some rule takes backwards (`on E -> X back`): it has a `force`
    #: argument, the consent every backward move needs.
    backward: bool = False

    @property
    def read_only(self) -> bool:
        return self.op in READ_OPS

    def mcp(self) -> dict[str, Any]:
        """The MCP `Tool` (as in `tools/list`)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": copy.deepcopy(self.input_schema),
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": False,
                "idempotentHint": self.read_only,
                "openWorldHint": False,
            },
        }

    def anthropic(self) -> dict[str, Any]:
        """A tool of Anthropic's Messages API (`tools=[...]`)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": copy.deepcopy(self.input_schema),
        }

    def openai(self, *, strict: bool = True) -> dict[str, Any]:
        """A function tool of OpenAI's Chat Completions API. `strict=True` gives the schema
        strict mode accepts (`strict_schema`); dispatch its calls with `strict=True` too."""
        parameters = (
            strict_schema(self.input_schema) if strict else copy.deepcopy(self.input_schema)
        )
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
                "strict": strict,
            },
        }


class FlowTools:
    """The tools of one or more flows (the newest version given of each). `prefix` puts the
    flow's name before every tool name; by default it does so only for several flows.

    Raises `ValueError` when two tools would share a name (an event called `start`, say)."""

    def __init__(self, machines: Iterable[Machine], *, prefix: bool | None = None) -> None:
        newest: dict[str, Machine] = {}
        for machine in machines:
            seen = newest.get(machine.name)
            if seen is None or machine.version > seen.version:
                newest[machine.name] = machine
        if not newest:
            raise ValueError("no flow to make tools of")
        self.machines: dict[str, Machine] = newest
        self.prefixed = len(newest) > 1 if prefix is None else prefix
        tools: list[Tool] = []
        for machine in newest.values():
            tools.extend(self._flow_tools(machine))
        by_name: dict[str, Tool] = {}
        for tool in tools:
            other = by_name.get(tool.name)
            if other is not None:
                raise ValueError(
                    f"two tools would be called `{tool.name}`: {_what(other)} and {_what(tool)}"
                    + ("" if self.prefixed else "; serve the flow with prefixed tool names")
                )
            by_name[tool.name] = tool
        self.tools: tuple[Tool, ...] = tuple(tools)
        self._by_name = by_name

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def tool(self, flow: str, op: ToolOp, event: str | None = None) -> Tool | None:
        for t in self.tools:
            if t.flow == flow and t.op == op and t.event == event:
                return t
        return None

    def mcp(self) -> list[dict[str, Any]]:
        return [t.mcp() for t in self.tools]

    def openai(self, *, strict: bool = True) -> list[dict[str, Any]]:
        return [t.openai(strict=strict) for t in self.tools]

    def anthropic(self) -> list[dict[str, Any]]:
        return [t.anthropic() for t in self.tools]

    # -- the per-state subset -----------------------------------------------------------------

    def for_instance(self, instance: Instance) -> list[Tool]:
        """The tools `instance` may be called with now: the events it accepts, `status` and
        `history`, `goto` (its `target` narrowed to the states reachable now) and `back` when
        the current state has a backward edge. Nothing once the instance is final but the two
        readers. `start` is not among them (the instance exists)."""
        flow = instance.machine.name
        accepted = {e.name for e in instance.accepted_events()}
        out: list[Tool] = []
        for t in self.tools:
            if t.flow != flow or t.op == "start":
                continue
            if t.op == "event" and t.event not in accepted:
                continue
            if t.op == "goto":
                targets = instance.allowed_targets(force=True)
                if not targets:
                    continue
                t = _narrow_targets(t, targets)
            if t.op == "back" and not has_backward_edge(instance):
                continue
            out.append(t)
        return out

    def allowed_names(self, instance: Instance) -> list[str]:
        """The names of the tools that may change `instance` now (the readers left out)."""
        return [t.name for t in self.for_instance(instance) if not t.read_only]

    # -- building -----------------------------------------------------------------------------

    def _name(self, machine: Machine, base: str) -> str:
        return f"{machine.name}_{base}" if self.prefixed else base

    def _flow_tools(self, machine: Machine) -> list[Tool]:
        transitions: list[Mapping[str, Any]] = list(machine.raw.get("transitions", ()))
        tools = self._lifecycle_tools(machine)
        tools.extend(self._event_tool(machine, transitions, name) for name in tool_events(machine))
        direct = [t for t in transitions if t.get("kind") == "direct" and t.get("target")]
        if direct:
            tools.append(self._goto_tool(machine, direct))
        if any(t.get("back") and t.get("target") for t in transitions):
            tools.append(
                Tool(
                    self._name(machine, "back"),
                    machine.name,
                    "back",
                    f"Move an instance of {_title(machine)!r} back to the state it came from "
                    f"(along a backward edge).",
                    _arguments({}, []),
                )
            )
        return tools

    def _lifecycle_tools(self, machine: Machine) -> list[Tool]:
        """`start`, `status` and `history`: every flow has them."""
        title = _title(machine)
        return [
            Tool(
                self._name(machine, "start"),
                machine.name,
                "start",
                f"Start a new instance of the flow {title!r}. `context` is its initial context. "
                f"The result carries its instance_id: pass it to every other tool.",
                _arguments(
                    {
                        HANDLE: {
                            "type": "string",
                            "description": "Optional. The id to give the new instance (a key "
                            "of the host's, such as a session id); by default a new one.",
                        },
                        "context": _described(
                            start_schema(machine),
                            "The initial context: only the fields listed here may be given "
                            "(the others start at their defaults).",
                        ),
                    },
                    ["context"],
                    handle=False,
                ),
            ),
            Tool(
                self._name(machine, "status"),
                machine.name,
                "status",
                f"The current state of an instance of {title!r}: its state, the state's meta, "
                f"the context, and the tools it accepts now.",
                _arguments({}, [], request_id=False),
            ),
            Tool(
                self._name(machine, "history"),
                machine.name,
                "history",
                f"Every step an instance of {title!r} has taken, oldest first.",
                _arguments({}, [], request_id=False),
            ),
        ]

    def _event_tool(
        self, machine: Machine, transitions: list[Mapping[str, Any]], name: str
    ) -> Tool:
        """The tool sending event `name`: its payload's fields are the arguments (and `force`
        when one of its rules goes backward)."""
        states = _states_accepting(machine, transitions, name)
        where = f" Accepted in: {', '.join(states)}." if states else ""
        schema = machine.event_schema(name)
        fields: dict[str, Any] = dict(schema.get("properties", {}))
        backward = any(
            t.get("back") and t.get("event") == name and t.get("kind") == "event"
            for t in transitions
        )
        for reserved in (HANDLE, REQUEST_ID, *((FORCE,) if backward else ())):
            if reserved in fields:
                raise ValueError(
                    f"event `{name}` of {machine.name} has a field `{reserved}`, which its "
                    f"tool uses for itself"
                )
        return Tool(
            self._name(machine, name),
            machine.name,
            "event",
            f"Send the event `{name}` to an instance of {_title(machine)!r}.{where} "
            f"The result gives the new state and the tools accepted next; a refusal "
            f"says why and what is allowed instead.",
            _arguments(
                {**fields, FORCE: _FORCE_ARGUMENT} if backward else fields,
                list(schema.get("required", [])),
            ),
            event=name,
            backward=backward,
        )

    def _goto_tool(self, machine: Machine, direct: list[Mapping[str, Any]]) -> Tool:
        """`goto`: its `target` one of the states the flow's direct edges lead to."""
        targets = sorted({str(t["target"]) for t in direct})
        properties: dict[str, Any] = {
            "target": {
                "type": "string",
                "enum": targets,
                "description": "The state to go to.",
            }
        }
        if any(t.get("back") for t in direct):
            properties[FORCE] = _FORCE_ARGUMENT
        return Tool(
            self._name(machine, "goto"),
            machine.name,
            "goto",
            f"Move an instance of {_title(machine)!r} to another state along a direct edge. "
            f"Results list the targets reachable now.",
            _arguments(properties, ["target"]),
        )


def _title(machine: Machine) -> str:
    """The flow's name as its tools' descriptions show it."""
    return machine.title or machine.name


def input_fields(machine: Machine) -> list[str]:
    """The context fields a caller may give at start through a tool (marked `input`)."""
    return [str(f["name"]) for f in machine.raw.get("context", ()) if f.get("input")]


def hidden_fields(machine: Machine) -> frozenset[str]:
    """The context fields a model may not read (marked `hidden`)."""
    return frozenset(str(f["name"]) for f in machine.raw.get("context", ()) if f.get("hidden"))


def visible_context(machine: Machine, context: Mapping[str, Any]) -> dict[str, Any]:
    """`context` without the fields marked `hidden`: what a model may read of it."""
    hidden = hidden_fields(machine)
    return {k: v for k, v in context.items() if k not in hidden}


def start_schema(machine: Machine) -> dict[str, Any]:
    """The JSON Schema of the `context` a `start` tool takes: the fields marked `input` only
    (the others keep their defaults; a trusted host sets them through the runtime's API)."""
    schema = machine.context_schema()
    allowed = set(input_fields(machine))
    schema["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k in allowed}
    schema["required"] = [r for r in schema.get("required", ()) if r in allowed]
    schema["additionalProperties"] = False
    return schema


def tool_events(machine: Machine) -> list[str]:
    """The events that are tools: those a caller may send (not `internal` ones, nor the
    `done.state.*` events the runtime raises when a compound state completes)."""
    return [
        name
        for name in machine.events
        if name not in machine.internal_events and name not in machine.own_events
    ]


def has_backward_edge(instance: Instance) -> bool:
    """Whether the instance's current state has a backward edge (what `back` could take)."""
    if instance.is_final:
        return False
    state = instance.state
    return any(
        t.get("back") and t.get("source") == state and t.get("target")
        for t in instance.machine.raw.get("transitions", ())
    )


def _what(tool: Tool) -> str:
    return f"the event `{tool.event}` of {tool.flow}" if tool.event else f"{tool.flow}'s {tool.op}"


def _states_accepting(
    machine: Machine, transitions: Iterable[Mapping[str, Any]], event: str
) -> list[str]:
    """The states a model sees (leaves, the `state` of results) where some rule takes `event`:
    a rule of a compound or parallel state counts in each leaf under it, written with the
    leaf's title and the region it is in."""
    sources: set[str] = set()
    for t in transitions:
        if t.get("kind") == "event" and t.get("event") == event:
            sources.add(str(t["source"]))
    out: list[str] = []
    for state in machine.states.values():
        if not state.atomic or state.kind == "choice":
            continue
        around = _ancestors(state)
        if state.name in sources or any(a.name in sources for a in around):
            out.append(_leaf_text(state, around))
    return out


def _ancestors(state: Any) -> list[Any]:
    out = []
    parent = state.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def _leaf_text(state: Any, around: list[Any]) -> str:
    text = state.name if state.raw_title is None else f"{state.name} ({state.raw_title!r})"
    region = next((a for a in around if a.parent is not None and a.parent.kind == "parallel"), None)
    return text if region is None else f"{text} in the region {region.name}"


def _described(schema: dict[str, Any], text: str) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k != "title"}
    out["description"] = text
    return out


def _arguments(
    properties: Mapping[str, Any],
    required: list[str],
    *,
    handle: bool = True,
    request_id: bool = True,
) -> dict[str, Any]:
    props: dict[str, Any] = {}
    req: list[str] = []
    if handle:
        props[HANDLE] = dict(_HANDLE_SCHEMA)
        req.append(HANDLE)
    props.update(copy.deepcopy(dict(properties)))
    req.extend(required)
    if request_id:
        props[REQUEST_ID] = dict(_REQUEST_ID_SCHEMA)
    return {"type": "object", "properties": props, "required": req, "additionalProperties": False}


def _narrow_targets(tool: Tool, targets: list[str]) -> Tool:
    schema = copy.deepcopy(tool.input_schema)
    schema["properties"]["target"]["enum"] = [
        t for t in schema["properties"]["target"]["enum"] if t in targets
    ]
    return Tool(tool.name, tool.flow, tool.op, tool.description, schema, tool.event)


# ---- OpenAI strict mode -------------------------------------------------------------------------

#: Keywords strict mode does not take; `title` is dropped too, as nothing needs it there.
_STRICT_DROPPED = ("default", "title")


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` in the form OpenAI's strict mode accepts: every object lists all its properties
    as required and has `additionalProperties: false`; a property that was optional becomes
    nullable (null = its default); a map (`additionalProperties: {...}`) becomes a list of
    `{"key", "value"}` entries; `default` and `title` are dropped. `from_strict` undoes it."""
    if "anyOf" in schema:
        return {
            **_kept(schema, ("anyOf",)),
            "anyOf": [strict_schema(s) for s in schema["anyOf"]],
        }
    kind = schema.get("type")
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        entry = {
            "type": "object",
            "properties": {
                "key": {"type": "string"},
                "value": strict_schema(schema["additionalProperties"]),
            },
            "required": ["key", "value"],
            "additionalProperties": False,
        }
        out = {**_kept(schema, ("type", "additionalProperties")), "type": "array", "items": entry}
        out["description"] = (
            str(schema["description"]) + " " if schema.get("description") else ""
        ) + "A map, written as a list of {key, value} entries."
        return out
    if kind == "object":
        required = set(schema.get("required", ()))
        props: dict[str, Any] = {}
        for name, prop in dict(schema.get("properties", {})).items():
            converted = strict_schema(prop)
            if name not in required and not _nullable(converted):
                converted = {"anyOf": [converted, {"type": "null"}]}
                if "description" in converted["anyOf"][0]:
                    converted["description"] = converted["anyOf"][0].pop("description")
            props[name] = converted
        return {
            **_kept(schema, ("properties", "required", "additionalProperties")),
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        }
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return {**_kept(schema, ("items",)), "items": strict_schema(schema["items"])}
    return _kept(schema, ())


def from_strict(schema: Mapping[str, Any], value: Any) -> Any:
    """Arguments written against `strict_schema(schema)` as the payload `schema` describes:
    null for a property that was optional and not nullable is left out (so it takes its
    default), `{key, value}` entry lists become maps. A value of another shape is left as it is,
    for validation to report."""
    if "anyOf" in schema:
        if value is None:
            return None
        for branch in schema["anyOf"]:
            if branch.get("type") != "null":
                return from_strict(branch, value)
        return value
    kind = schema.get("type")
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        if isinstance(value, list) and all(
            isinstance(e, Mapping) and set(e) == {"key", "value"} for e in value
        ):
            item = schema["additionalProperties"]
            return {str(e["key"]): from_strict(item, e["value"]) for e in value}
        return value
    if kind == "object" and isinstance(value, Mapping):
        return _object_from_strict(schema, value)
    if kind == "array" and isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [from_strict(schema["items"], v) for v in value]
    return value


def _object_from_strict(schema: Mapping[str, Any], value: Mapping[str, Any]) -> dict[str, Any]:
    """`from_strict` of an object with properties: each known one converted, an optional one
    given as null left out."""
    props = schema.get("properties", {})
    required = set(schema.get("required", ()))
    out: dict[str, Any] = {}
    for name, v in value.items():
        prop = props.get(name)
        if prop is None:
            out[name] = v
        elif v is None and name not in required and not _nullable(prop):
            continue
        else:
            out[name] = from_strict(prop, v)
    return out


def _kept(schema: Mapping[str, Any], also: tuple[str, ...]) -> dict[str, Any]:
    return {
        k: copy.deepcopy(v) for k, v in schema.items() if k not in _STRICT_DROPPED and k not in also
    }


def _nullable(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "null" or any(
        isinstance(s, Mapping) and s.get("type") == "null" for s in schema.get("anyOf", ())
    )


__all__ = [
    "HANDLE",
    "READ_OPS",
    "REQUEST_ID",
    "FlowTools",
    "Tool",
    "ToolOp",
    "from_strict",
    "has_backward_edge",
    "hidden_fields",
    "input_fields",
    "start_schema",
    "strict_schema",
    "tool_events",
    "visible_context",
]
