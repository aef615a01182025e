"""Tool calls on durable instances: a call in, a result the model can act on out.

`ToolDispatcher(flows, tools).call(name, arguments)` runs one call of a tool of `FlowTools`
through `DurableFlows` (so every step is validated, recorded in the store and idempotent by
`request_id`) and answers with a `ToolResult`:

- **success**: `ok`, the `instance_id`, the new `state`, its `title` and `meta`, whether it is
  `final`, and `allowed_tools`, the names of the tools that may change it now (`status` and
  `history` always may), with `goto_targets` where the flow has direct edges;
- **refusal** (`is_error`): the runtime's rejection as `Rejection.to_dict()` gives it (`error`
  is its code, `message` its text), and what is allowed now: `allowed_tools` with the
  arguments each takes (JSON Schema), `goto_targets`;
- **bad arguments** (`is_error`): the field-level feedback of seed 003 (`result`, `issues`
  with `invalid` / `missing` / `unknown`, `issue_count`, `action`), whether the runtime found
  it in an event's payload or the dispatcher in the tool's own arguments.

docs/agents.md shows each, verbatim.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flowc.runtime.clock import to_datetime
from flowc.runtime.instance import Instance
from flowc.runtime.scheduled_view import visible_scheduled
from flowc.runtime.store.durable import DurableFlows, DurableOutcome
from flowc.runtime.store.handles import InvalidHandle, check_handle
from flowc.runtime.store.types import (
    InstanceExists,
    InstanceNotFound,
    InstanceRecord,
    Json,
    effect_id,
)
from flowc.runtime.tools import (
    FORCE,
    HANDLE,
    REQUEST_ID,
    FlowTools,
    Tool,
    from_strict,
    input_fields,
    visible_context,
)

#: Namespace of the instance ids `start` derives from a request_id (so a retried start finds
#: the instance its first attempt created).
_START_IDS = uuid.UUID("5b1f8a3e-3c1d-4d0e-9a57-7f2a0c6e4b11")


def start_id(flow: str, request_id: str) -> str:
    """The id of the instance a `start` of `flow` with this `request_id` (and no
    `instance_id`) creates: the same at every retry."""
    return uuid.uuid5(_START_IDS, f"{flow}\0{request_id}").hex


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call. `data` is what the model reads (as `text()`)."""

    is_error: bool
    data: dict[str, Json]

    def text(self) -> str:
        """The result as the model sees it: JSON, indented for reading."""
        return json.dumps(self.data, indent=2, ensure_ascii=False)

    def mcp(self) -> dict[str, Any]:
        """An MCP `CallToolResult`."""
        return {
            "content": [{"type": "text", "text": self.text()}],
            "structuredContent": self.data,
            "isError": self.is_error,
        }

    def anthropic(self, tool_use_id: str) -> dict[str, Any]:
        """A `tool_result` content block of Anthropic's Messages API."""
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.text(),
            "is_error": self.is_error,
        }

    def openai(self, tool_call_id: str) -> dict[str, Any]:
        """A `tool` message of OpenAI's Chat Completions API."""
        return {"role": "tool", "tool_call_id": tool_call_id, "content": self.text()}


class ToolDispatcher:
    """Runs calls of `tools` (default: the tools of every flow `flows` was given) on the
    instances kept by `flows`."""

    def __init__(
        self,
        flows: DurableFlows,
        tools: FlowTools | None = None,
        *,
        on_status: Callable[[str], dict[str, Json]] | None = None,
    ) -> None:
        self.flows = flows
        self.tools = tools if tools is not None else FlowTools(flows.flows.machines())
        #: more for a `status` result, given the instance's id (`flowc mcp --effects` adds the
        #: effects still waiting for delivery)
        self.on_status = on_status

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, strict: bool = False
    ) -> ToolResult:
        """Run the call. `strict=True` takes arguments written against the OpenAI strict-mode
        schema (`Tool.openai(strict=True)`). A value nested deeper than `SHOWN_DEPTH` (an
        argument echoed in feedback) is shown as a placeholder: JSON encoders and MCP's
        models stop at a few hundred levels, and the answer must reach the model."""
        try:
            result = self._call(name, arguments, strict=strict)
        except InvalidHandle as refused:  # an instance_id or request_id no store can keep
            return _error(refused.to_dict({"id": HANDLE, "key": REQUEST_ID}))
        return ToolResult(result.is_error, _shallow(result.data, SHOWN_DEPTH))

    def _call(self, name: str, arguments: Mapping[str, Any] | None, *, strict: bool) -> ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            return _error(
                {
                    "ok": False,
                    "error": "unknown_tool",
                    "message": f"There is no tool called {name!r}.",
                    "tools": list(self.tools.names()),
                }
            )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return _error(_feedback(tool, invalid=[_issue("", arguments, "an object")]))
        args = dict(from_strict(tool.input_schema, arguments) if strict else arguments)
        if tool.op == "start":
            return self._start(tool, args)
        problems = _Problems()
        instance_id = problems.string(args, HANDLE, required=True)
        request_id = problems.string(args, REQUEST_ID, required=False)
        force, rest = self._step_arguments(tool, args, problems)
        if problems or instance_id is None:
            return _error(problems.feedback(tool))
        record = self._record(tool, instance_id)
        if isinstance(record, ToolResult):
            return record
        if tool.op == "status":
            return self._status(record, instance_id)
        if tool.op == "history":
            return ToolResult(False, self._history(instance_id, record.state))
        return self._move(tool, instance_id, rest, force=force, request_id=request_id)

    def _step_arguments(
        self, tool: Tool, args: dict[str, Any], problems: _Problems
    ) -> tuple[bool, dict[str, Any]]:
        """`force` (given to an event tool with a backward rule), and the arguments left: an
        event's payload, which the runtime checks field by field, or a tool's own."""
        if tool.op != "event":
            return False, self._own_arguments(tool, args, problems)
        force = problems.boolean(args, FORCE) if tool.backward else False
        return force, args

    def _record(self, tool: Tool, instance_id: str) -> InstanceRecord | ToolResult:
        """The stored instance a tool acts on, or the error when there is none or it runs
        another flow."""
        try:
            record = self.flows.store.load(instance_id)
        except InstanceNotFound:
            return _error(_unknown_instance(tool, instance_id, self._start_name(tool)))
        if record.flow != tool.flow:
            return _error(
                {
                    "ok": False,
                    "error": "wrong_flow",
                    "message": f"Instance {instance_id!r} runs the flow {record.flow!r}; "
                    f"{tool.name} is a tool of {tool.flow!r}.",
                    "instance_id": instance_id,
                }
            )
        return record

    def _status(self, record: InstanceRecord, instance_id: str) -> ToolResult:
        """The instance's state, meta, visible context, the tools it accepts now and its
        pending scheduled events, as far as the flow lets a model see them."""
        instance = self._instance(record)
        context = visible_context(instance.machine, instance.context)
        view = {**self._view(instance), "context": context}
        scheduled = visible_scheduled(instance.machine, instance.scheduled)
        if scheduled:
            view["scheduled"] = scheduled
        if self.on_status is not None:
            view.update(self.on_status(instance_id))
        return ToolResult(False, view)

    def _move(
        self,
        tool: Tool,
        instance_id: str,
        rest: dict[str, Any],
        *,
        force: bool,
        request_id: str | None,
    ) -> ToolResult:
        """An event, `goto` or `back`: the step, and what the model may do next."""
        try:
            if tool.op == "event":
                assert tool.event is not None
                out = self.flows.send(instance_id, tool.event, rest, force=force, key=request_id)
            elif tool.op == "goto":
                out = self.flows.goto(
                    instance_id,
                    str(rest["target"]),
                    force=bool(rest.get("force", False)),
                    key=request_id,
                )
            else:
                # The model asked to move back: that is the consent a backward move needs.
                out = self.flows.back(instance_id, force=True, key=request_id)
        except InstanceNotFound:
            return _error(_unknown_instance(tool, instance_id, self._start_name(tool)))
        return self._answer(tool, instance_id, out)

    def _start_name(self, tool: Tool) -> str:
        start = self.tools.tool(tool.flow, "start")
        return start.name if start is not None else "start"

    # -- the operations -----------------------------------------------------------------------

    def _start(self, tool: Tool, args: dict[str, Any]) -> ToolResult:
        problems = _Problems()
        chosen = problems.string(args, HANDLE, required=False)
        request_id = problems.string(args, REQUEST_ID, required=False)
        context = args.pop("context", None)
        if context is None:
            context = {}
        elif not isinstance(context, Mapping):
            problems.invalid.append(_issue("context", context, "an object"))
        else:
            # Least privilege: a caller sets only the fields the flow marks `input`.
            allowed = set(input_fields(self.flows.flows.latest(tool.flow)))
            problems.unknown.extend(f"context.{k}" for k in sorted(context) if k not in allowed)
        problems.unknown.extend(sorted(args))
        if problems:
            return _error(problems.feedback(tool))
        if request_id is not None:
            check_handle("key", request_id)
        instance_id = chosen or (start_id(tool.flow, request_id) if request_id else None)
        try:
            out = self.flows.start(tool.flow, context, id=instance_id)
        except InstanceExists:
            assert instance_id is not None
            record = self.flows.store.load(instance_id)
            if request_id is None or record.flow != tool.flow:
                return _error(
                    {
                        "ok": False,
                        "error": "instance_exists",
                        "message": f"There is already an instance {instance_id!r}: act on it, "
                        f"or start another under a new instance_id.",
                        HANDLE: instance_id,
                    }
                )
            # A retried start: the instance its first attempt created.
            return ToolResult(False, {**self._view(self._instance(record)), "replayed": True})
        if not out.ok:
            return _error(_under("context", out.data))
        assert out.record is not None
        view = self._view(self._instance(out.record))
        effects = effects_of(out.instance_id, out.record.incarnation, out.data)
        if effects:
            view["effects"] = effects
        return ToolResult(False, view)

    def _own_arguments(
        self, tool: Tool, args: dict[str, Any], problems: _Problems
    ) -> dict[str, Any]:
        own: dict[str, Any] = {}
        properties = tool.input_schema["properties"]
        if tool.op == "goto":
            target = problems.string(args, "target", required=True)
            allowed = properties["target"]["enum"]
            if target is not None and target not in allowed:
                problems.invalid.append(_issue("target", target, f"one of {', '.join(allowed)}"))
            own["target"] = target
            if "force" in properties:
                force = args.pop("force", False)
                if not isinstance(force, bool):
                    problems.invalid.append(_issue("force", force, "true or false"))
                own["force"] = force is True
        problems.unknown.extend(sorted(args))
        return own

    def _answer(self, tool: Tool, instance_id: str, out: DurableOutcome) -> ToolResult:
        if out.status in ("committed", "replayed"):
            # The state right after this call's step (another client may have moved on since;
            # a replay shows the instance as it is now).
            instance = (
                self._instance(out.record)
                if out.record is not None
                else self.flows.load(instance_id)
            )
            view = self._view(instance)
            record = out.record or self.flows.store.load(instance_id)
            effects = effects_of(instance_id, record.incarnation, out.data)
            if effects:
                view["effects"] = effects
            if out.replayed:
                view["replayed"] = True
            return ToolResult(False, view)
        data: dict[str, Json] = {**out.data, HANDLE: instance_id}
        if data.get("kind") == "invalid_payload" and tool.name != tool.event:
            # The runtime's advice names the event; the model knows the tool.
            data["action"] = (
                f"Call {tool.name} again with corrected arguments. Unknown fields may be typos."
            )
        if data.get("kind") != "invalid_payload":
            # The tool was the wrong one now: say which are right (a bad payload needs only
            # its feedback: the tool was right, its arguments were not).
            data.update(self._allowed(self.flows.load(instance_id), with_arguments=True))
        return _error(data)

    def _history(self, instance_id: str, state: str) -> dict[str, Json]:
        rows = self.flows.store.history(instance_id)
        return {
            "ok": True,
            HANDLE: instance_id,
            "state": state,
            "history": [
                {
                    "seq": r.seq,
                    "at": to_datetime(r.at).isoformat(),
                    "from": r.source,
                    "to": r.target,
                    "trigger": r.trigger,
                    "payload": r.payload,
                }
                for r in rows
            ],
        }

    # -- views --------------------------------------------------------------------------------

    def _instance(self, record: InstanceRecord) -> Instance:
        machine = self.flows.flows.exact(record.flow, record.flow_version, record.graph_hash)
        if machine is None:
            return self.flows.load(record.id)
        return machine.restore(record.snapshot, clock=self.flows.clock)

    def _view(self, instance: Instance) -> dict[str, Json]:
        view: dict[str, Json] = {
            "ok": True,
            HANDLE: instance.id,
            "state": instance.state,
            "title": instance.title,
            "meta": instance.meta,
            "final": instance.is_final,
        }
        if len(instance.configuration) > 1:
            view["active"] = active_leaves(instance)
        view.update(self._allowed(instance, with_arguments=False))
        return view

    def _allowed(self, instance: Instance, *, with_arguments: bool) -> dict[str, Json]:
        tools = [t for t in self.tools.for_instance(instance) if not t.read_only]
        out: dict[str, Json] = {}
        if with_arguments:
            out["allowed_tools"] = [{"name": t.name, "arguments": _own_schema(t)} for t in tools]
        else:
            out["allowed_tools"] = [t.name for t in tools]
        if self.tools.tool(instance.machine.name, "goto") is not None:
            out["goto_targets"] = instance.allowed_targets()
        return out


def active_leaves(instance: Instance) -> list[Json]:
    """A statechart's active leaves (one per region of a parallel state), each with its title
    and meta: what `state`, `title` and `meta` give of a flat flow."""
    states = instance.machine.states
    out: list[Json] = []
    for name in instance.configuration:
        state = states[name]
        if state.atomic:
            out.append({"state": name, "title": state.title, "meta": dict(state.meta)})
    return out


def effects_of(instance_id: str, incarnation: str | None, data: Mapping[str, Json]) -> list[Json]:
    """The effects a committed step emitted, as a result lists them: each with the id its
    delivery from the outbox carries (`OutboxEffect.id`, of the instance's `incarnation`), its
    name and fields."""
    seq = data.get("seq")
    found = data.get("effects")
    if not isinstance(found, list):
        return []
    out: list[Json] = []
    for i, e in enumerate(found):
        if isinstance(e, dict):
            out.append(
                {
                    "id": effect_id(instance_id, incarnation, int(seq or 0), i),
                    "effect": e.get("effect"),
                    "fields": e.get("payload"),
                }
            )
    return out


# ---- feedback -----------------------------------------------------------------------------------


class _Problems:
    """What is wrong with a tool's own arguments, in the runtime's feedback shape."""

    def __init__(self) -> None:
        self.invalid: list[dict[str, Json]] = []
        self.missing: list[dict[str, Json]] = []
        self.unknown: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.invalid or self.missing or self.unknown)

    def string(self, args: dict[str, Any], name: str, *, required: bool) -> str | None:
        if name not in args or (args[name] is None and not required):
            args.pop(name, None)
            if required:
                self.missing.append({"field": name, "requirement": "a string"})
            return None
        value = args.pop(name)
        if not isinstance(value, str) or not value:
            self.invalid.append(_issue(name, value, "a non-empty string"))
            return None
        return value

    def boolean(self, args: dict[str, Any], name: str) -> bool:
        """An optional boolean argument (false when absent or null)."""
        value = args.pop(name, None)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.invalid.append(_issue(name, value, "true or false"))
            return False
        return value

    def feedback(self, tool: Tool) -> dict[str, Json]:
        return _feedback(tool, self.invalid, self.missing, self.unknown)


def _feedback(
    tool: Tool,
    invalid: list[dict[str, Json]] | None = None,
    missing: list[dict[str, Json]] | None = None,
    unknown: list[str] | None = None,
) -> dict[str, Json]:
    invalid, missing, unknown = invalid or [], missing or [], unknown or []
    count = len(invalid) + len(missing) + len(unknown)
    return {
        "ok": False,
        "error": "invalid_arguments",
        "message": f"Invalid arguments for '{tool.name}': {count} issue(s).",
        "result": "validation_failed",
        "issues": {"invalid": list(invalid), "missing": list(missing), "unknown": list(unknown)},
        "issue_count": count,
        "action": f"Call {tool.name} again with corrected arguments. Unknown fields may be typos.",
    }


def _issue(field: str, provided: Any, requirement: str) -> dict[str, Json]:
    kind = "null" if provided is None else type(provided).__name__
    return {
        "field": field,
        "provided": provided if _is_json(provided) else repr(provided),
        "problem": f"expected {requirement}, got {kind}",
        "requirement": requirement,
    }


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _under(prefix: str, data: Mapping[str, Json]) -> dict[str, Json]:
    """A context rejection's feedback with its field paths under `context.`, as the start
    tool's arguments are."""
    out = dict(data)
    issues = out.get("issues")
    if isinstance(issues, dict):
        moved: dict[str, Json] = {}
        for key, items in issues.items():
            if not isinstance(items, list):
                moved[key] = items
                continue
            moved[key] = [
                {**i, "field": _path(prefix, i.get("field"))}
                if isinstance(i, dict)
                else _path(prefix, i)
                for i in items
            ]
        out["issues"] = moved
    return out


def _path(prefix: str, field: Json) -> Json:
    if not isinstance(field, str):
        return field
    if not field:
        return prefix
    return f"{prefix}{field}" if field.startswith("[") else f"{prefix}.{field}"


def _unknown_instance(tool: Tool, instance_id: str, start: str) -> dict[str, Json]:
    return {
        "ok": False,
        "error": "unknown_instance",
        "message": f"There is no instance {instance_id!r}. Use the instance_id that {start} "
        f"returned.",
        HANDLE: instance_id,
    }


def _own_schema(tool: Tool) -> dict[str, Json]:
    """A tool's arguments without the handle and request id every tool takes."""
    schema = tool.input_schema
    props = {k: v for k, v in schema["properties"].items() if k not in (HANDLE, REQUEST_ID)}
    return {
        "type": "object",
        "properties": props,
        "required": [r for r in schema["required"] if r in props],
        "additionalProperties": False,
    }


#: How deep a value in a result may nest before it is shown as `TOO_DEEP`.
SHOWN_DEPTH = 32
TOO_DEEP = "(nested too deeply to show)"


def _shallow(data: dict[str, Json], depth: int) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for key, value in data.items():
        out[key] = _cut(value, depth - 1)
    return out


def _cut(value: Json, depth: int) -> Json:
    if type(value) is dict:
        return TOO_DEEP if depth <= 0 else _shallow(value, depth)
    if type(value) is list:
        return TOO_DEEP if depth <= 0 else [_cut(v, depth - 1) for v in value]
    return value


def _error(data: dict[str, Json]) -> ToolResult:
    return ToolResult(True, data)


__all__ = ["ToolDispatcher", "ToolResult", "active_leaves", "effects_of", "start_id"]
