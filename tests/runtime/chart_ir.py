"""Statecharts written as IR version 2 by hand, for the runtime's tests (the compiler's
statechart syntax lands separately): a small builder of states and rules, and the expression
and action nodes the tests use."""

from __future__ import annotations

from typing import Any

from flowc.runtime import Machine
from flowc.runtime.clock import Clock
from flowc.runtime.limits import Limits

Node = dict[str, Any]

_TYPES = {"int": {"kind": "int"}, "str": {"kind": "str"}, "bool": {"kind": "bool"}}


def lit(value: Any) -> Node:
    return {"op": "lit", "value": value}


def ctx(name: str) -> Node:
    return {"op": "ctx", "value": name}


def event(name: str) -> Node:
    return {"op": "event", "value": name}


def op(name: str, a: Node, b: Node) -> Node:
    return {"op": name, "args": [a, b]}


def log(text: str) -> Node:
    """`append(log, text)`"""
    return {"op": "append", "target": ["log"], "value": lit(text)}


def add(field: str, n: int = 1) -> Node:
    return {"op": "add", "target": [field], "value": lit(n)}


def raise_(name: str, **fields: Node) -> Node:
    value = None
    if fields:
        args: list[Node] = []
        for k, v in fields.items():
            args += [lit(k), v]
        value = {"op": "map", "args": args}
    return {"op": "raise", "event": name, "value": value}


class Chart:
    """A flow with `log: list[str]` and `n: int` in its context; states and rules in the
    order they are added (states in document order: parents first)."""

    def __init__(self, name: str = "chart", events: dict[str, dict[str, str]] | None = None):
        self.name = name
        self.events = events or {}
        self.states: list[Node] = []
        self.transitions: list[Node] = []

    def state(
        self,
        name: str,
        kind: str = "normal",
        *,
        parent: str | None = None,
        initial: bool = False,
        entry: tuple[Node, ...] = (),
        exit: tuple[Node, ...] = (),
        history: str | None = None,
        default: str | None = None,
        unhandled: str | None = None,
        logged: bool = False,
    ) -> Chart:
        """`logged`: entry and exit append `+name` / `-name` to `log`."""
        st: Node = {"name": name}
        if kind != "normal":
            st["kind"] = kind
        if parent is not None:
            st["parent"] = parent
        if initial:
            st["initial"] = True
        if logged:
            entry = (log(f"+{name}"), *entry)
            exit = (*exit, log(f"-{name}"))
        if entry:
            st["entry"] = list(entry)
        if exit:
            st["exit"] = list(exit)
        if history is not None:
            st["history"] = history
        if default is not None:
            st["default"] = default
        if unhandled is not None:
            st["unhandled"] = unhandled
        self.states.append(st)
        return self

    def rule(
        self,
        source: str,
        target: str | None,
        on: str | None = None,
        *,
        kind: str | None = None,
        guard: Node | None = None,
        do: tuple[Node, ...] = (),
        after_ms: int | None = None,
        reenter: bool = False,
        back: bool = False,
        code: str | None = None,
    ) -> Chart:
        if kind is None:
            kind = "event" if on is not None else "timer" if after_ms else "always"
        t: Node = {
            "index": len(self.transitions),
            "source": source,
            "target": target,
            "kind": kind,
        }
        if on is not None:
            t["event"] = on
        if guard is not None:
            t["guard"] = guard
        if do:
            t["actions"] = list(do)
        if after_ms is not None:
            t["after_ms"] = after_ms
        if reenter:
            t["reenter"] = True
        if back:
            t["back"] = True
        if code is not None:
            t["code"] = code
            t["message"] = code
        self.transitions.append(t)
        return self

    def ir(self) -> dict[str, Any]:
        tops = [s for s in self.states if "parent" not in s]
        initial = next((s["name"] for s in tops if s.get("initial")), tops[0]["name"])
        return {
            "ir_version": 2,
            "name": self.name,
            "version": 1,
            "initial": initial,
            "context": [
                {
                    "name": "log",
                    "type": {"kind": "list", "item": {"kind": "str"}},
                    "required": False,
                    "default": [],
                },
                {"name": "n", "type": {"kind": "int"}, "required": False, "default": 0},
            ],
            "events": [
                {
                    "name": name,
                    "fields": [{"name": f, "type": _TYPES[ty]} for f, ty in fields.items()],
                }
                for name, fields in self.events.items()
            ],
            "states": self.states,
            "transitions": self.transitions,
        }

    def machine(self, clock: Clock | None = None, limits: Limits | None = None) -> Machine:
        return Machine(self.ir(), clock=clock, limits=limits).preload()
