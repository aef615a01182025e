"""The compiled flow read once: the IR's JSON loaded into typed, slotted views.

`LoadedFlow` is the one reader of the IR's states, transitions, events and hierarchy. It builds
one `CState` per state holding its dispatch table (event -> the event's definition and its
candidate transitions in try order), its direct edges by target, its routing rules and timers;
one `CTransition` per rule, one `CEvent` per event. Nothing else in the runtime reads the IR's
state, transition or event records: the engine (engine.py), the generated accelerator
(codegen.py) and the instance (instance.py) read these views. Expressions and action blocks
are read by their two compilers, `ExprCompiler` (expr.py: closures) and codegen's `Generator`
(Python source), each from the node it is handed here.

Loading checks every transition (states, kinds, events, timers) but builds a state's tables
only when the state is first used, and guards and actions are compiled to closures on first
use (a transition that is never tried is never compiled): loading a 1,000-state machine is
parsing its JSON plus one pass over its transitions. `preload()` builds and compiles
everything at once, and in doing so checks every expression.

A loaded flow never changes after loading: instances share its defaults, meta and closures.
"""

from __future__ import annotations

import gc
import json
import operator
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from flowc.runtime.expr import ActionBlock, Evaluator, ExprCompiler, has_loop
from flowc.runtime.limits import Limits
from flowc.runtime.messages import DEFAULT_MESSAGES
from flowc.runtime.model import (
    READABLE_IR_VERSIONS,
    STATE_KINDS,
    TRANSITION_KINDS,
    CompiledFlow,
    IRLoadError,
    check_ir,
)
from flowc.runtime.statetree import StateTree, StateTreeError
from flowc.runtime.templating import TemplateCache
from flowc.runtime.validate import Field, Type, TypeSystem, fields_type, object_schema

if TYPE_CHECKING:
    from flowc.runtime.codegen import Dispatch
    from flowc.runtime.engine import Plan


_EMPTY: dict[str, Any] = {}

#: The functions that read the step rather than a value (IR version 2): `active(STATE)` asks
#: the configuration, `event_name()` the event being processed.
ACTIVE = frozenset({"active"})


CONFIGURATION_CALLS = frozenset({"active", "event_name"})


#: Action ops whose steps the engine runs whole (`Macrostep`), never a generated function.
_ENGINE_OPS = frozenset({"raise", "send", "cancel"})


def leaf_chart(raw: Any) -> bool:
    """Whether a statechart's configuration is always one leaf and its ancestors, and a step
    on an event from a leaf one microstep that depends on the leaf and the event alone: only
    atomic, choice, top-level final and compound states (no parallel or history state, no
    final child whose entry raises `done.state`), no `always` rule, no `raise`, and nothing
    reading the configuration or the event's name (`active`, `event_name`)."""
    for s in raw.get("states") or ():
        kind = s.get("kind", "normal")
        if kind not in ("normal", "choice", "compound", "final"):
            return False
        if kind == "final" and s.get("parent") is not None:
            return False
    if any(t.get("kind") == "always" for t in raw.get("transitions") or ()):
        return False
    stack: list[Any] = [raw.get("states"), raw.get("transitions")]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            op = n.get("op")
            if op in _ENGINE_OPS or (op == "call" and n.get("value") in ("active", "event_name")):
                return False
            stack.extend(n.values())
        elif isinstance(n, list | tuple):
            stack.extend(n)
    return True


def calls(node: Any, names: frozenset[str]) -> set[str]:
    """Which of the functions `names` raw IR (an action block, an action, an expression, or
    lists of them) calls somewhere in it. Only containers are queued (most values are strings
    and numbers)."""
    # Raw IR is what `json` makes (`Machine(flow)` dumps its models to the same): exact type
    # tests, not the ABCs', and no generator.
    found: set[str] = set()
    stack = [node]
    push = stack.append
    while stack:
        n = stack.pop()
        if type(n) is dict:
            if n.get("op") == "call":
                name = n.get("value")
                if type(name) is str and name in names:  # (a malformed one may be a list)
                    found.add(name)
                if len(found) == len(names):
                    break
            for v in n.values():
                if type(v) is dict or type(v) is list or type(v) is tuple:
                    push(v)
        elif type(n) is list or type(n) is tuple:
            stack.extend(n)
    return found


class CTransition:
    """One transition, ready to run. `guard` / `actions` are closures (compiled on first call)
    or None; `target` is the target `CState` (None for `reject`); `internal` marks `-> self`
    (no exit or entry actions, timers kept); `plan` is what taking it does (engine.py)."""

    __slots__ = (
        "actions",
        "after_expr",
        "after_ms",
        "back",
        "data",
        "event",
        "guard",
        "index",
        "internal",
        "kind",
        "machine",
        "plan",
        "rank",
        "raw",
        "reenter",
        "source",
        "target",
    )

    def __init__(
        self, raw: Mapping[str, Any], source: CState, target: CState | None, machine: LoadedFlow
    ) -> None:
        # Made for every rule of a state when the state is first used (`Machine._wire_now`).
        self.raw = raw
        self.machine = machine
        self.index: int = raw["index"]
        self.kind: str = raw["kind"]
        self.source = source
        self.target: CState | None = target
        self.event: str | None = raw.get("event")
        self.back: bool = bool(raw.get("back", False))
        self.after_ms: int | None = raw.get("after_ms")
        #: For `reject`: its data (`with {...}`), compiled on first use
        self.data: Evaluator | None = None
        # Guards and actions are compiled when first called (`_first_guard`, `_first_actions`
        # put the compiled closure in their place).
        self.guard: Evaluator | None = None if raw.get("guard") is None else self._first_guard
        self.actions: ActionBlock | None = self._first_actions if raw.get("actions") else None
        #: `reenter`: a `-> self` or a compound's rule to its descendant leaves and enters again
        self.reenter: bool = bool(raw.get("reenter"))
        #: a computed delay (`after EXPR UNIT`): its expression (None: `after_ms`)
        self.after_expr: Any = raw.get("after_expr")
        #: `-> self` (unless `reenter`): nothing is left or entered
        self.internal = target is source and not self.reenter
        #: What taking it does (engine.py), worked out on first use
        self.plan: Plan | None = None
        #: Where it is tried among rules falling due together (timers): innermost state
        #: first, as an event's rules are, then document order
        self.rank: tuple[int, int, int] = (-len(source.ancestors), source.order, self.index)

    def _first_guard(self, c: dict[str, Any], e: Any, s: Any) -> Any:
        fn = self.guard = self.machine._compiler.compile(self.raw["guard"])
        return fn(c, e, s)

    def _first_actions(self, c: dict[str, Any], e: Any, s: Any) -> None:
        fn = self.machine._compile_transition_actions(self)
        assert fn is not None
        self.actions = fn
        fn(c, e, s)

    # Read from the IR when asked (a refusal, a fault's words), not copied when the state is
    # wired: wiring makes every rule of the state, and these are read for few of them.
    @property
    def code(self) -> str | None:
        """A `reject` rule's code."""
        return self.raw.get("code")

    @property
    def message(self) -> str | None:
        """A `reject` rule's message template."""
        return self.raw.get("message")

    @property
    def line(self) -> int:
        """The rule's line in its source (0: not known)."""
        return self.raw.get("line", 0)  # type: ignore[no-any-return]

    def describe(self) -> str:
        what = f"on {self.event}" if self.event else self.kind
        where = f" (line {self.line})" if self.line else ""
        target = self.target.name if self.target is not None else "reject"
        return f"rule #{self.index} of {self.source.name}: {what} -> {target}{where}"

    def uses_event(self) -> bool:
        """Whether the guard reads the payload (then it cannot be judged without one)."""
        return _mentions_event(self.raw.get("guard"))


#: What a state gets when it is first used (`Machine._wire_now`), not when loaded.
_WIRED = frozenset(
    {
        "always",
        "back_edges",
        "direct",
        "done_value",
        "entry",
        "exit",
        "fast",
        "initial_actions",
        "on",
        "routes",
        "timers",
        "transitions",
    }
)


class CState:
    """A state, with its dispatch tables. These (the attributes in `_WIRED`) are built when
    the state is first used, so loading a large flow pays only for checking its transitions;
    which state is used first makes no difference to what any of them holds."""

    __slots__ = (
        "_loader",
        "always",
        "ancestors",
        "atomic",
        "back_edges",
        "children",
        "choice",
        "default",
        "direct",
        "done_value",
        "entry",
        "exit",
        "fast",
        "final",
        "has_done_data",
        "has_entry",
        "has_exit",
        "has_initial_actions",
        "history",
        "ignores",
        "initial_actions",
        "initial_child",
        "initial_targets",
        "invokes",
        "kind",
        "meta",
        "name",
        "on",
        "order",
        "parent",
        "raw",
        "raw_title",
        "regions",
        "routes",
        "timed",
        "timers",
        "title",
        "transitions",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.name: str = raw["name"]
        self.kind: str = raw.get("kind", "normal")
        if self.kind not in STATE_KINDS:
            raise IRLoadError(f"state {self.name!r} has unknown kind {self.kind!r}")
        self.raw_title: str | None = raw.get("title")
        #: What `state.title` reads: the title, or the name when there is none.
        self.title: str = self.raw_title or self.name
        self.final: bool = self.kind == "final"
        self.choice: bool = self.kind == "choice"
        self.meta: Mapping[str, Any] = raw.get("meta") or _EMPTY
        #: The machine that wires this state on first use; None once wired.
        self._loader: LoadedFlow | None = None
        # The hierarchy (IR version 2; `Machine._load_hierarchy`). A flat flow's states are
        # all top-level atomic states.
        #: position in document order (the IR's order of states)
        self.order: int = 0
        self.parent: CState | None = None
        #: the proper ancestors, innermost first
        self.ancestors: tuple[CState, ...] = ()
        #: the child states in document order (history pseudo-states included)
        self.children: tuple[CState, ...] = ()
        #: the children that are states proper (no history): a parallel state's regions
        self.regions: tuple[CState, ...] = ()
        self.initial_child: CState | None = None
        #: a compound's `initial -> ...` rule: the descendants its default entry enters (empty:
        #: its initial child's defaults); its actions are the block `initial_actions`
        self.initial_targets: tuple[CState, ...] = ()
        #: `shallow` / `deep` on a history pseudo-state, else None; `default` is the state it
        #: enters when nothing is recorded (None: its parent's initial child)
        self.history: str | None = None
        self.default: CState | None = None
        #: no child states: a leaf of the configuration
        self.atomic: bool = self.kind in ("normal", "final", "choice")
        #: `unhandled ignore` here or on an ancestor
        self.ignores: bool = raw.get("unhandled") == "ignore"
        #: Whether the state has `after` rules (known since the load, wired or not): what a
        #: first step asks of the state it leads to (engine.py's `timers_of`).
        self.timed: bool = False
        #: Which action blocks the state has (known since the load, wired or not: the engine
        #: asks before running one, and a block is compiled only when it runs).
        self.has_entry: bool = bool(raw.get("entry"))
        self.has_exit: bool = bool(raw.get("exit"))
        self.has_initial_actions: bool = bool(raw.get("initial_actions"))
        self.has_done_data: bool = raw.get("done_data") is not None
        #: The child flows the state starts when entered (IR version 5; children.py).
        self.invokes: tuple[CInvoke, ...] = tuple(CInvoke(i) for i in raw.get("invokes") or ())

    entry: ActionBlock | None
    exit: ActionBlock | None
    initial_actions: ActionBlock | None
    #: a final state's done data (the payload of its parent's `done.state` event), or None
    done_value: Evaluator | None
    #: event name -> (its definition, its candidate transitions in try order: in a statechart
    #: the state's own rules, then its parent's, and so on outwards)
    on: dict[str, tuple[CEvent, tuple[CTransition, ...]]]
    #: event name -> its generated dispatch function (codegen.py), written on first send
    fast: dict[str, Dispatch]
    #: target name -> direct edges to it, in try order
    direct: dict[str, tuple[CTransition, ...]]
    routes: tuple[CTransition, ...]
    timers: tuple[CTransition, ...]
    back_edges: tuple[CTransition, ...]
    #: eventless rules (`always`), the state's own then its ancestors'
    always: tuple[CTransition, ...]
    transitions: tuple[CTransition, ...]

    def view(self) -> dict[str, Any]:
        """`state` as templates see it."""
        return {"name": self.name, "title": self.title, "meta": self.meta}

    def __repr__(self) -> str:
        return f"<state {self.name}>"


class CInvoke:
    """`invoke FLOW(...)` of a state (IR version 5): what children.py starts. The expressions
    are compiled on first use (`LoadedFlow.invoke_parts`)."""

    __slots__ = ("finalize", "flow", "forward", "id", "id_target", "join", "parts", "raw")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.id: str = raw["id"]
        self.flow: str = raw["flow"]
        #: null: every child must finish; N: the first N (a fan-out's `join`)
        self.join: int | None = raw.get("join")
        self.forward: bool = raw.get("forward") is True
        self.id_target: tuple[str, ...] = tuple(raw.get("id_target") or ())
        self.finalize: ActionBlock | None = None
        #: (input, each) evaluators once compiled
        self.parts: tuple[Evaluator | None, Evaluator | None] | None = None

    @property
    def fan_out(self) -> bool:
        return self.raw.get("each") is not None

    def __repr__(self) -> str:
        return f"<invoke {self.id}: {self.flow}>"


class _UnwiredState(CState):
    """A state not used yet: reading one of its wired attributes wires it (`_wire_now`), which
    makes it a plain `CState`. Only this class has `__getattr__`: on a class that has one,
    every attribute read goes through it first (and Python cannot specialise the read), so
    a wired state, read on every step, must not."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        # Only called for a slot not set yet: the wired attributes of a state not used so far.
        loader = self._loader
        if loader is None or name not in _WIRED:
            raise AttributeError(name)
        loader._wire_now(self)
        return object.__getattribute__(self, name)


class Requirement:
    __slots__ = ("code", "data", "guard", "message", "raw")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.code: str = raw["code"]
        self.message: str = raw["message"]
        self.guard: Evaluator | None = None
        #: its data (`with {...}`), compiled on first use
        self.data: Evaluator | None = None

    def uses_event(self) -> bool:
        """Whether the condition reads the payload (then it cannot be judged without one)."""
        return _mentions_event(self.raw.get("guard"))


class CEvent:
    """An event: its payload type (checked with one call), requirements and JSON Schema."""

    __slots__ = ("_schema", "check", "empty", "field_types", "fields", "name", "requires", "type")

    def __init__(self, name: str, fields: tuple[Field, ...], requires: tuple[Requirement, ...]):
        self.name = name
        self.fields = fields
        #: field name -> its type: what the actions of a rule on this event read (`event.x`)
        self.field_types: dict[str, Type] = {f.name: f.type for f in fields}
        self.type: Type = fields_type(name, fields)
        self.check = self.type.check
        self.requires = requires
        #: The normalised payload of an event sent with none, shared (never changed in place);
        #: None when some field is required.
        self.empty: dict[str, Any] | None = None
        if not any(f.required for f in fields):
            self.empty = {f.name: f.default for f in fields}
        self._schema: dict[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = object_schema(self.fields, title=self.name)
        return self._schema


class LoadedFlow:
    """A compiled flow read into typed views (see the module's docstring). `Machine` (machine.py)
    is the loaded flow that runs instances."""

    limits: Limits

    def __init__(
        self,
        flow: CompiledFlow | Mapping[str, Any],
        *,
        limits: Limits,
        check_invariants: bool = False,
    ):
        """`check_invariants`: check the flow's `invariant`s after every step and refuse a
        step that breaks one (`invariant_violated`, nothing changed). Off by default: tests and
        `flowc explore` check them; a host turns this on when a fault must never commit."""
        raw = flow.model_dump(mode="json") if isinstance(flow, CompiledFlow) else flow
        #: The bounds on values and work of this machine's instances (limits.py).
        self.limits: Limits = limits
        #: The flow declares effects (`effect NAME(...)`) or has loops: steps that may emit or
        #: loop collect (runtime/outputs.py: the effects, and the step's loop budget).
        self.emits: bool = (
            bool(raw.get("effects")) or has_loop((raw.get("states"), raw.get("transitions")))
            if isinstance(raw, Mapping)
            else False
        )
        # Loading allocates thousands of small objects that all live as long as the machine;
        # the cyclic collector would scan the whole parsed JSON again and again meanwhile.
        paused = gc.isenabled()
        gc.disable()
        try:
            # A `CompiledFlow` was validated when it was made (pydantic): its dump is not
            # checked again; JSON from elsewhere is, once (`check_ir`).
            self._load(raw, checked=isinstance(flow, CompiledFlow))
        except IRLoadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IRLoadError(f"malformed compiled flow: {type(exc).__name__}: {exc}") from exc
        finally:
            if paused:
                gc.enable()
        #: (name, evaluator) of each invariant when the host asked for them to be checked
        self.invariants: tuple[tuple[str, Evaluator], ...] | None = None
        if check_invariants:
            try:
                self.invariants = tuple(
                    (inv["name"], self._compiler.compile(inv["expr"]))
                    for inv in raw.get("invariants", ())
                )
            except (KeyError, TypeError) as exc:
                raise IRLoadError(f"malformed invariant: {type(exc).__name__}: {exc}") from exc

    # ---- loading ----------------------------------------------------------------------------
    def _load(self, raw: Mapping[str, Any], checked: bool = False) -> None:
        _check_version(raw)
        if not checked:
            check_ir(raw)
        self.raw = raw
        self.name: str = raw["name"]
        self.title: str | None = raw.get("title")
        self.version: int = raw.get("version", 1)
        self.hash: str = raw.get("hash", "")
        self.types = TypeSystem(
            {e["name"]: e["members"] for e in raw.get("enums", ())},
            {r["name"]: r["fields"] for r in raw.get("records", ())},
            self.limits,
        )
        self.context_fields: tuple[Field, ...] = self.types.fields(
            raw.get("context", ()), "context"
        )
        self.context_type = fields_type("context", self.context_fields)
        self._context_by_name = {f.name: f for f in self.context_fields}
        #: target path -> its type (`target_type`), found once per path
        self._target_types: dict[tuple[str, ...], Type] = {}
        #: The context of a new instance before the host's values: shared, never changed.
        self.defaults: dict[str, Any] = {
            f.name: f.default for f in self.context_fields if not f.required
        }
        self.events: dict[str, CEvent] = {}
        for ev in raw.get("events", ()):
            name = ev["name"]
            fields = self.types.fields(ev.get("fields", ()), f"event {name}")
            requires = tuple(Requirement(r) for r in ev.get("requires", ()))
            self.events[name] = CEvent(name, fields, requires)
        #: The events declared `internal` (IR version 4): only the flow itself sends them
        #: (`raise`, a scheduled `send`); a host's send is refused (`internal_event`).
        self.own_events: frozenset[str] = frozenset(
            ev["name"] for ev in raw.get("events", ()) if ev.get("internal") is True
        )
        v2 = raw.get("ir_version", 1) >= 2
        self._load_states(raw, v2)
        # Every transition is checked now; the runtime structures of a state are built when
        # it is first used (`_wire_now`).
        self._load_transitions(raw, v2)
        # Re-entrant: wiring a nested state reads its parent's tables, which wires the parent
        # (in the same thread) when it has not been used yet.
        self._wiring = threading.RLock()
        if v2:
            self._load_chart_flags(raw)
        self._load_compiler(raw)
        self._load_composition(raw)
        self.messages: dict[str, str] = {**DEFAULT_MESSAGES, **(raw.get("messages") or {})}
        self.journals: dict[str, str] = {j["name"]: j["template"] for j in raw.get("journals", ())}
        self.templates: dict[str, str] = dict(raw.get("templates") or {})
        self.template_cache = TemplateCache(self.limits)

    def _load_states(self, raw: Mapping[str, Any], v2: bool) -> None:
        """The states, unwired, the initial one, and (IR version 2) their hierarchy."""
        self.states: dict[str, CState] = {}
        for s in raw.get("states", ()):
            state: CState = _UnwiredState(s)
            if state.name in self.states:
                raise IRLoadError(f"state {state.name!r} is declared twice")
            self.states[state.name] = state
        initial = raw["initial"]
        if initial not in self.states:
            raise IRLoadError(f"the initial state {initial!r} is not a state")
        self.initial: CState = self.states[initial]
        #: Whether a state has a parent or is compound, parallel or history (IR version 2).
        self.hierarchical: bool = False
        #: Whether steps run on the engine (engine.py's `Macrostep`): the flow is
        #: hierarchical, or has eventless rules, or raises events. Otherwise a step is one
        #: transition and pairs get generated dispatch functions (codegen.py).
        self.chart: bool = False
        #: The `done.state.NAME` events the runtime declares (a flow may not send them).
        self.internal_events: frozenset[str] = frozenset()
        #: Whether a step must look for eventless rules after each microstep: the flow has
        #: `always` rules or choice states (whose routes are tried the same way).
        self.eventless: bool = any(s.choice for s in self.states.values())
        #: Whether some expression may call `active(...)`: a first use then asks whether the
        #: rule's own actions do (engine.py's `Plan.blind`). Never in IR version 1, which has
        #: no such function (`ExprCompiler` refuses it there); in a version 2 flow, what the
        #: load's walk of the expressions finds, assumed of a statechart it does not walk.
        self.reads_active: bool = v2
        if v2:
            self._load_hierarchy()

    def _load_transitions(self, raw: Mapping[str, Any], v2: bool) -> None:
        """Check every transition and group them by source (`_unwired`); mark the states with
        timers, and whether the flow needs the engine (`always` rules, raises)."""
        states = self.states
        by_source: dict[str, list[Mapping[str, Any]]] = {}
        timed: set[str] = set()
        for t in raw.get("transitions", ()):
            source = t["source"]
            if source not in states:
                raise IRLoadError(
                    f"transition #{t.get('index')} leaves unknown state {t['source']!r}"
                )
            kind = self._check_transition(t, v2)
            if kind == "timer":
                timed.add(source)
            group = by_source.get(source)
            if group is None:
                by_source[source] = [t]
            else:
                group.append(t)
        self._unwired = by_source
        for name in timed:
            states[name].timed = True

    def _check_transition(self, t: Mapping[str, Any], v2: bool) -> str:
        """Check one transition of the IR (its source exists); returns its kind."""
        states, events = self.states, self.events
        source = t["source"]
        index, kind = t["index"], t["kind"]
        if kind not in TRANSITION_KINDS:
            raise IRLoadError(f"transition #{index} has unknown kind {kind!r}")
        target = t.get("target")
        if target is not None:
            if target not in states:
                raise IRLoadError(f"transition #{index} goes to unknown state {target!r}")
        elif kind != "reject":
            raise IRLoadError(f"transition #{index} ({kind}) has no target")
        if kind in ("event", "reject") and t.get("event") not in events:
            raise IRLoadError(f"transition #{index} is on unknown event {t.get('event')!r}")
        if self.hierarchical and states[source].history is not None:
            raise IRLoadError(f"transition #{index} leaves history state {source!r}")
        raises = v2 and self._raises(t.get("actions"), f"transition #{index}")
        if kind == "always":
            self.chart = self.eventless = True
        elif raises:
            self.chart = True
        if kind == "timer":
            _check_delay(t)
        return str(kind)

    def _load_chart_flags(self, raw: Mapping[str, Any]) -> None:
        """An IR version 2 flow needs the engine when a state's actions raise
        events or some expression reads the event being processed; note whether one may call
        `active(...)`."""
        for s in raw["states"]:
            for block in ("entry", "exit", "initial_actions"):
                if self._raises(s.get(block), f"the {block} actions of {s['name']}"):
                    self.chart = True
        if not self.chart:
            found = calls((raw.get("transitions"), raw["states"]), CONFIGURATION_CALLS)
            # The engine keeps the event being processed for `event_name()`,
            # through timers, `goto` and the start too.
            self.chart = "event_name" in found
            self.reads_active = "active" in found

    def _load_compiler(self, raw: Mapping[str, Any]) -> None:
        """The expression compiler, the configurations seen, whether the chart is one chain."""
        states = self.states
        v2 = raw.get("ir_version", 1) >= 2
        effects = frozenset(e.get("name") for e in raw.get("effects") or ())
        self._compiler = ExprCompiler(self.limits, configuration=v2, effects=effects)
        #: A statechart's configurations seen -> (every state's name, the leaves' names), as
        #: steps record them (`Instance._take_chart`); bounded, emptied when full.
        self.config_names: dict[tuple[CState, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        #: A statechart whose configuration is always one leaf and its ancestors
        #: (engine.py's `leaf_chart`): its (leaf, event) pairs get generated functions too.
        self.leaf_chart: bool = self.chart and leaf_chart(raw)
        if self.leaf_chart:
            self.reads_active = False  # `leaf_chart` found no call of `active`
        #: Whether a step gathers what it emits and raises (outputs.py): the flow declares
        #: effects, loops (each loop charges the step's budget) or is a statechart (raises).
        self.collects: bool = self.emits or self.chart
        #: Whether expressions read the step's configuration or event (`active`,
        #: `event_name`): the engine then makes its macrostep their scope.
        self.scoped: bool = self.chart or self.reads_active
        for state in states.values():
            state._loader = self

    def _load_composition(self, raw: Mapping[str, Any]) -> None:
        """IR version 5: the child flows (compiled flows by name, loaded when first started)
        and whether this flow takes part in a tree of instances (children.py): it invokes
        children or sends messages (`send E to parent|ID`). Such a flow's steps all run on the
        engine, whose commit starts and cancels children and queues messages."""
        children = raw.get("children") or _EMPTY
        if not isinstance(children, Mapping):
            raise IRLoadError("a compiled flow's `children` must be an object")
        self.child_flows: Mapping[str, Mapping[str, Any]] = children
        invokes = [i for s in self.states.values() for i in s.invokes]
        #: invoke id -> the invoke (ids are unique in a flow)
        self.invokes: dict[str, CInvoke] = {}
        for inv in invokes:
            if inv.flow not in children:
                raise IRLoadError(f"invoke {inv.id!r} starts {inv.flow!r}, not a child flow")
            if inv.id in self.invokes:
                raise IRLoadError(f"invoke id {inv.id!r} is used twice")
            self.invokes[inv.id] = inv
        #: Whether instances of this flow are nodes of a tree (children.py); set on a child
        #: flow's machine too (`Machine.child_machine`).
        self.composes: bool = bool(invokes) or _sends_messages(raw)
        #: Whether some invoke forwards the external events its parent takes (`forward`).
        self.forwards: bool = any(inv.forward for inv in invokes)
        if self.composes:
            self.leaf_chart = False  # every step runs on the engine (`Machine._dispatch`)
            self.collects = True  # which gathers the messages its actions send

    def invoke_parts(self, inv: CInvoke) -> tuple[Evaluator | None, Evaluator | None]:
        """The compiled input and list (a fan-out's) of an invoke, and its `finalize` block."""
        if inv.parts is None:
            raw = inv.raw
            finalize = raw.get("finalize")
            if finalize:
                inv.finalize = self._compiler.actions(finalize, self.target_type)
            given, each = raw.get("input"), raw.get("each")
            inv.parts = (
                None if given is None else self._compiler.compile(given),
                None if each is None else self._compiler.compile(each),
            )
        return inv.parts

    def _raises(self, actions: Any, where: str) -> bool:
        """Whether an action block raises, schedules (`send`) or cancels events (the step then
        runs on the engine, which collects them); each event must be declared (`IRLoadError`)."""
        names, cancels = _raised(actions)
        for name in names:
            if name not in self.events:
                raise IRLoadError(f"{where} raises undeclared event {name!r}")
        return bool(names) or cancels

    def _load_hierarchy(self) -> None:
        """Link and check the state hierarchy of an IR version 2 flow: parents listed before
        their children (document order), compound states with one initial child, history
        states inside a compound or parallel state with a default among its descendants."""
        states = self.states
        try:
            tree = self.tree = StateTree.from_ir(self.raw["states"])
        except StateTreeError as exc:
            raise IRLoadError(str(exc)) from None
        for st in states.values():
            st.order = tree.order(st.name)
            name = tree.parent(st.name)
            if name is not None:
                _link_parent(st, states[name], tree)
                self.hierarchical = True
            if st.kind in ("compound", "parallel", "history"):
                self.hierarchical = True
        if self.initial.parent is not None:
            raise IRLoadError(f"the initial state {self.initial.name!r} is not a top-level state")
        done = [f"done.state.{st.name}" for st in states.values() if _link_children(st, states)]
        # `done.state.NAME` of every compound and parallel state, without a payload, unless
        # the flow declares it.
        implicit = [name for name in done if name not in self.events]
        for name in implicit:
            self.events[name] = CEvent(name, (), ())
        # (declared ones too: they carry done data, and only the engine raises them)
        self.internal_events = frozenset(done)
        if self.hierarchical:
            self.chart = True

    def _wire(self, state: CState, rules: list[Mapping[str, Any]]) -> None:
        """Build the runtime structures of `state` from its `rules` (raw, in index order)."""
        raw = state.raw
        state.fast = {}
        state.entry = self._lazy_actions(state, "entry") if raw.get("entry") else None
        state.exit = self._lazy_actions(state, "exit") if raw.get("exit") else None
        state.initial_actions = (
            self._lazy_actions(state, "initial_actions") if raw.get("initial_actions") else None
        )
        done_data = raw.get("done_data")
        state.done_value = self._compiler.compile(done_data) if done_data is not None else None
        states = self.states
        transitions: list[CTransition] = []
        on: dict[str, list[CTransition]] = {}
        direct: dict[str, list[CTransition]] = {}
        routes: list[CTransition] = []
        timers: list[CTransition] = []
        always: list[CTransition] = []
        back_edges: list[CTransition] = []
        for raw_t in rules:
            target = raw_t.get("target")
            t = CTransition(raw_t, state, None if target is None else states[target], self)
            transitions.append(t)
            kind = t.kind
            if kind == "event" or kind == "reject":
                assert t.event is not None
                on.setdefault(t.event, []).append(t)
                if t.back and t.target is not None:
                    back_edges.append(t)
            elif kind == "direct":
                assert t.target is not None
                direct.setdefault(t.target.name, []).append(t)
                if t.back:
                    back_edges.append(t)
            elif kind in ("choice", "else"):
                routes.append(t)
            elif kind == "always":
                always.append(t)
            else:
                timers.append(t)
        if state.final and state.parent is None:
            # a top-level final state ends the instance
            on, direct, routes, timers, always = {}, {}, [], [], []
        state.transitions = tuple(transitions)
        state.on = {name: (self.events[name], tuple(ts)) for name, ts in on.items()}
        state.direct = {name: tuple(ts) for name, ts in direct.items()}
        state.routes = tuple(routes)
        state.timers = tuple(timers)
        state.back_edges = tuple(back_edges)
        state.always = tuple(always)
        if state.parent is not None:
            _inherit_rules(state, state.parent)

    def _wire_now(self, state: CState) -> None:
        """Build the runtime structures of `state` (on its first use)."""
        with self._wiring:
            if state._loader is None:
                return  # another thread was first
            try:
                self._wire(state, sorted(self._unwired.get(state.name, ()), key=_raw_index))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise IRLoadError(f"malformed compiled flow: {type(exc).__name__}: {exc}") from exc
            self._unwired.pop(state.name, None)
            state._loader = None
            state.__class__ = CState

    def _compile_transition_actions(self, t: CTransition) -> ActionBlock | None:
        ev = self.events.get(t.event) if t.event else None
        event_types = ev.field_types if ev is not None else None
        return self._compiler.actions(t.raw["actions"], self.target_type, event_types)

    # The entry and exit actions of a state are compiled when first called: the stub compiles
    # the real closure, puts it where the stub was, and runs it.
    def _lazy_actions(self, state: CState, which: str) -> ActionBlock:
        def first_call(c: dict[str, Any], e: Any, s: Any) -> None:
            fn = self._compiler.actions(state.raw[which], self.target_type)
            assert fn is not None
            setattr(state, which, fn)
            fn(c, e, s)

        return first_call

    def _refusal_data(self, rule: Requirement | CTransition) -> Evaluator | None:
        """The compiled `with {...}` of a `require` clause or `reject` rule, or None."""
        fn = rule.data
        if fn is None:
            raw = rule.raw.get("data")
            if raw is None:
                return None
            fn = rule.data = self._compiler.compile(raw)
        return fn

    def _requirement_guard(self, req: Requirement) -> Evaluator:
        if req.guard is None:
            req.guard = self._compiler.compile(req.raw["guard"])
        return req.guard

    def preload(self) -> Self:
        """Compile every guard, action and requirement now (checking each expression) instead
        of on first use. Returns the machine."""
        paused = gc.isenabled()
        gc.disable()  # see __init__: thousands of closures, all as long-lived as the machine
        try:
            for state in self.states.values():
                self._preload_state(state)
            for ev in self.events.values():
                for req in ev.requires:
                    self._requirement_guard(req)
                    self._refusal_data(req)
        finally:
            if paused:
                gc.enable()
        return self

    def _preload_state(self, state: CState) -> None:
        """Wire `state` and compile its action blocks and its rules' guards, actions and
        refusal data."""
        c = self._compiler
        if state._loader is not None:
            self._wire_now(state)
        for which in ("entry", "exit", "initial_actions"):
            if state.raw.get(which):
                setattr(state, which, c.actions(state.raw[which], self.target_type))
        for t in state.transitions:
            if t.raw.get("guard") is not None:
                t.guard = c.compile(t.raw["guard"])
            if t.raw.get("actions"):
                t.actions = self._compile_transition_actions(t)
            self._refusal_data(t)

    def target_type(self, path: Sequence[str]) -> Type:
        """The type of the context location an action writes (`stats.hits`)."""
        if len(path) == 1:  # a context field, most targets: its declared type
            f = self._context_by_name.get(path[0])
            if f is not None:
                return f.type
        key = tuple(path)
        found = self._target_types.get(key)
        if found is None:
            found = self._target_types[key] = self._find_target_type(path)
        return found

    def _find_target_type(self, path: Sequence[str]) -> Type:
        f = self._context_by_name.get(path[0])
        if f is None:
            raise IRLoadError(f"an action writes unknown context field {path[0]!r}")
        ty = f.type
        for name in path[1:]:
            if ty.kind == "optional" and ty.item is not None:
                ty = ty.item
            sub = None
            if ty.kind == "record":
                for field in ty.fields:
                    if field.name == name:
                        sub = field
                        break
            if sub is None:
                raise IRLoadError(f"an action writes unknown field {'.'.join(path)!r}")
            ty = sub.type
        return ty

    # ---- introspection ----------------------------------------------------------------------
    def state_names(self) -> list[str]:
        return list(self.states)

    def event_schema(self, event: str) -> dict[str, Any]:
        """The JSON Schema of an event's payload."""
        schema: dict[str, Any] = json.loads(json.dumps(self.events[event].schema()))
        return schema

    def context_schema(self) -> dict[str, Any]:
        return object_schema(self.context_fields, title="context")


_raw_index = operator.itemgetter("index")


def _inherit_rules(state: CState, parent: CState) -> None:
    """The rules of the ancestors apply in `state` after its own (innermost first), so finding
    the candidates stays one lookup (reading `parent.on` wires the parent first)."""
    for name, (ev, ts) in parent.on.items():
        mine = state.on.get(name)
        state.on[name] = (ev, (*mine[1], *ts)) if mine else (ev, ts)
    for name, ts in parent.direct.items():
        own = state.direct.get(name)
        state.direct[name] = (*own, *ts) if own else ts
    state.back_edges = (*state.back_edges, *parent.back_edges)
    state.always = (*state.always, *parent.always)


def _check_delay(t: Mapping[str, Any]) -> None:
    """A timer transition has one delay: a computed one, or `after_ms` > 0."""
    index, after_ms = t["index"], t.get("after_ms")
    if t.get("after_expr") is not None:
        if after_ms is not None:
            raise IRLoadError(f"timer transition #{index} has both delays")
    elif not (isinstance(after_ms, int) and after_ms > 0):
        raise IRLoadError(f"timer transition #{index} needs after_ms > 0")


def _link_parent(st: CState, parent: CState, tree: StateTree) -> None:
    """Make `st` a child of `parent` (the tree has checked that it is listed before `st`),
    which must be a compound or parallel state."""
    if parent.kind not in ("compound", "parallel"):
        raise IRLoadError(
            f"state {st.name!r} has parent {parent.name!r}, which is not a compound or "
            "parallel state"
        )
    st.parent = parent
    st.ancestors = (parent, *parent.ancestors)  # the parent's are linked: document order
    parent.children = (*parent.children, st)
    if parent.ignores:
        st.ignores = True


def _link_children(st: CState, states: Mapping[str, CState]) -> bool:
    """Check what `st`'s kind says of its children (a compound state's initial child, a
    history state's default); whether it is a compound or parallel state, which completes."""
    st.regions = tuple(c for c in st.children if c.kind != "history")
    completes = st.kind in ("compound", "parallel")
    if completes:
        if not st.regions:
            raise IRLoadError(f"{st.kind} state {st.name!r} has no child states")
    elif st.children:
        raise IRLoadError(f"{st.kind} state {st.name!r} has child states")
    if st.kind == "compound":
        _link_initial(st, states)
    if st.kind == "history":
        _link_history(st, states)
    return completes


def _link_initial(st: CState, states: Mapping[str, CState]) -> None:
    """A compound state's one initial child, and the states its initial transition targets
    (inside that child, or one of its own histories)."""
    initials = [c for c in st.regions if c.raw.get("initial")]
    if len(initials) != 1:
        found = ", ".join(c.name for c in initials) or "none"
        raise IRLoadError(f"compound state {st.name!r} needs exactly one initial child ({found})")
    st.initial_child = initials[0]
    targets = []
    for name in st.raw.get("initial_targets") or ():
        target = states.get(name)
        own_history = target is not None and target.kind == "history"
        if target is None or not (
            initials[0] in (target, *target.ancestors) or (own_history and target.parent is st)
        ):
            raise IRLoadError(
                f"initial target {name!r} of {st.name!r} is not a state inside its "
                "initial child, nor one of its histories"
            )
        targets.append(target)
    st.initial_targets = tuple(targets)


def _link_history(st: CState, states: Mapping[str, CState]) -> None:
    """A history state: inside a compound or parallel state, its kind, and its default (a
    state inside that parent, not a history state)."""
    if st.parent is None:
        raise IRLoadError(f"history state {st.name!r} is not inside a compound or parallel state")
    st.history = st.raw.get("history") or "shallow"
    default = st.raw.get("default")
    if default is not None:
        target = states.get(default)
        if target is None or st.parent not in target.ancestors:
            raise IRLoadError(
                f"the default {default!r} of history state {st.name!r} is not a "
                f"state inside {st.parent.name!r}"
            )
        if target.kind == "history":
            raise IRLoadError(f"the default of history state {st.name!r} is a history state")
        st.default = target


def _check_version(raw: Mapping[str, Any]) -> None:
    version = raw.get("ir_version")
    if type(version) is not int or version not in READABLE_IR_VERSIONS:
        raise IRLoadError(
            f"compiled flow has ir_version {version!r}; this runtime reads "
            f"{' and '.join(map(str, READABLE_IR_VERSIONS))}"
        )


def iter_actions(actions: Any) -> Iterator[Mapping[str, Any]]:
    """Every action of a block (raw IR), those in the arms of an `if` and the bodies of loops
    included, in order."""
    for a in actions or ():
        if isinstance(a, Mapping):
            yield a
            for b in a.get("branches") or ():
                if isinstance(b, Mapping):
                    yield from iter_actions(b.get("actions"))


def _raised(actions: Any) -> tuple[list[Any], bool]:
    """The events an action block (an `if` or loop inside it included) raises or schedules
    (`send`), and whether it `cancel`s one."""
    out = []
    cancels = False
    for a in iter_actions(actions):
        op = a.get("op")
        if op == "raise" or (op == "send" and a.get("to") is None):
            # (a message `send E to parent|ID` names an event of its receiver)
            out.append(a.get("event"))
        cancels = cancels or op == "cancel"
    return out, cancels


def sends_message(actions: Any) -> bool:
    """Whether an action block (raw IR) sends a message (`send E to parent|ID`), also inside
    the arms of an `if` or a loop."""
    return any(a.get("op") == "send" and a.get("to") is not None for a in iter_actions(actions))


def _sends_messages(raw: Mapping[str, Any]) -> bool:
    """Whether some action of the flow sends a message (`send E to parent|ID`)."""
    blocks = [t.get("actions") for t in raw.get("transitions", ())]
    for s in raw.get("states", ()):
        blocks += [s.get(b) for b in ("entry", "exit", "initial_actions")]
        blocks += [i.get("finalize") for i in s.get("invokes") or ()]
    return any(sends_message(b) for b in blocks)


def _mentions_event(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    if node.get("op") == "event":
        return True
    return any(_mentions_event(a) for a in node.get("args") or ())


def emits_in(actions: Any) -> bool:
    """Whether an action block (raw IR) holds an `emit` or a loop (which charges the step's
    budget), also inside the arms of an `if`."""
    return any(a.get("op") in ("emit", "for", "each") for a in iter_actions(actions))


def block_emits(owner: CState | CTransition, block: str) -> bool:
    """Whether the action block `block` of a state or rule may emit an effect or loop."""
    return emits_in(owner.raw.get(block))


def actions_call(t: CTransition, names: frozenset[str]) -> set[str]:
    """Which of the functions `names` a rule's own actions call."""
    return calls(t.raw.get("actions"), names)
