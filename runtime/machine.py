"""`Machine`: a compiled flow loaded for execution (flow.py reads it), shared by all its
instances: the constructors from JSON, files and source, the choice of each send's dispatch
(the engine's general path, or the function generated for a hot (state, event) pair,
codegen.py), instances (`start`, `restore`), and the messages of rejections.

`Machine.preload()` builds and compiles everything at once; `flowc run` and the tests call it.
The machine never changes after loading: instances share its defaults, meta and closures.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from flowc.runtime.clock import Clock, system_clock
from flowc.runtime.codegen import Dispatch, Generator, general, warming
from flowc.runtime.flow import CState, LoadedFlow, _check_version
from flowc.runtime.limits import DEFAULT_LIMITS, Limits
from flowc.runtime.messages import DEFAULT_MESSAGES
from flowc.runtime.model import UNHASHED_MEMBERS, CompiledFlow, IRLoadError
from flowc.runtime.rejections import Rejected, Rejection
from flowc.runtime.templating import EventVars, wrap

if TYPE_CHECKING:
    from flowc.runtime.instance import Instance

_EMPTY: dict[str, Any] = {}


class Machine(LoadedFlow):
    """A loaded flow. Build one with `Machine.from_json`, `from_file`, `from_source` or
    `Machine(compiled_flow)`; start instances with `start` and bring them back with `restore`.
    """

    #: Sends of a (state, event) pair taken by the general path before the pair's dispatch
    #: function is generated (codegen.py). Generating costs some hundreds of microseconds:
    #: worth it for pairs used again and again, not for the few sends of a short-lived
    #: process. 0 generates on first use. Set it on a machine before its first send.
    hot_after: int = 32

    def __init__(
        self,
        flow: CompiledFlow | Mapping[str, Any],
        *,
        clock: Clock | None = None,
        limits: Limits | None = None,
        check_invariants: bool = False,
    ):
        """`check_invariants`: check the flow's `invariant`s after every step and refuse a
        step that breaks one (`invariant_violated`, nothing changed). Off by default: tests and
        `flowc explore` check them; a host turns this on when a fault must never commit."""
        self.clock: Clock = clock or system_clock
        super().__init__(flow, limits=limits or DEFAULT_LIMITS, check_invariants=check_invariants)
        self._generator: Generator | None = None
        self._generating = threading.Lock()
        #: (state, event) -> its generated function
        self._written: dict[tuple[str, str], Dispatch] = {}
        #: event -> the general path's dispatch, in a statechart
        self._chart_steps: dict[str, Dispatch] = {}
        #: whether this is a child flow's machine (`child_machine`)
        self.is_child = False
        #: child flow name -> its machine (`child_machine`)
        self._child_machines: dict[str, Machine] = {}

    # ---- constructors ---------------------------------------------------------------------
    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        verify_hash: bool = True,
        clock: Clock | None = None,
        limits: Limits | None = None,
        check_invariants: bool = False,
    ) -> Machine:
        """Load compiled JSON (`flowc compile`'s output). Refuses another `ir_version` and,
        unless `verify_hash=False`, a content hash that does not match (a hand-edited file)."""
        paused = gc.isenabled()
        gc.disable()  # see __init__
        try:
            raw = _parse_json(text)
        except ValueError as exc:
            raise IRLoadError(f"compiled flow is not JSON: {str(exc)[:200]}") from None
        except RecursionError:
            raise IRLoadError(
                "compiled flow is not JSON this runtime reads: nested too deeply"
            ) from None
        finally:
            if paused:
                gc.enable()
        if not isinstance(raw, dict):
            raise IRLoadError("compiled flow must be a JSON object")
        _check_version(raw)
        if verify_hash and raw.get("hash"):
            _verify_hash(raw, text)
        return cls(raw, clock=clock, limits=limits, check_invariants=check_invariants)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        verify_hash: bool = True,
        clock: Clock | None = None,
        limits: Limits | None = None,
        check_invariants: bool = False,
    ) -> Machine:
        """A compiled `.json` file, or a `.flow` source file (compiled first)."""
        p = Path(path)
        if p.suffix == ".flow":
            return cls.from_source(
                p.read_bytes(),
                str(p),
                clock=clock,
                limits=limits,
                check_invariants=check_invariants,
            )
        return cls.from_json(
            p.read_bytes(),
            verify_hash=verify_hash,
            clock=clock,
            limits=limits,
            check_invariants=check_invariants,
        )

    @classmethod
    def from_source(
        cls,
        text: str | bytes,
        filename: str = "<input>",
        *,
        clock: Clock | None = None,
        limits: Limits | None = None,
        check_invariants: bool = False,
    ) -> Machine:
        """Compile `.flow` source and load it. Imports the compiler (and Lark) on first use;
        raises `IRLoadError` listing the errors when the source does not compile."""
        from flowc.compiler import compile_source

        result = compile_source(text, filename)
        if result.flow is None or result.errors:
            lines = [f"{filename} does not compile:"]
            lines += [str(d) for d in result.errors] or ["(no flow produced)"]
            raise IRLoadError("\n".join(lines))
        return cls(result.flow, clock=clock, limits=limits, check_invariants=check_invariants)

    def _dispatch(self, state: CState, event: str) -> Dispatch:
        """What `Instance.send` calls for `event` in `state` when `state.fast` has nothing yet:
        the general path for the pair's first `hot_after` sends, then the generated function
        (both kept); the general path for an event the state has no rule for (not kept: hosts
        may send any name)."""
        if self.composes and (self.is_child or self.chart):
            # A node of a tree of instances (children.py): the engine's commit starts and
            # cancels children, queues messages and writes a child's steps into its root's
            # history. A flat root's pairs may still be generated: those whose step touches
            # none of that (codegen.py's `_touches_tree`).
            return self._general(event)
        if self.chart and not (
            self.leaf_chart
            and state.atomic
            and not state.final
            and type(event) is str
            and event not in self.internal_events
        ):
            # A statechart step runs on the general path (engine.py's `Macrostep`): what it
            # does depends on the whole configuration, not on one (state, event) pair.
            return self._general(event)
        try:
            # An `internal` event is never the host's: the general path refuses it.
            known = event in state.on and event not in self.own_events
        except TypeError:
            known = False
        if not known:
            return general(event)
        if self.hot_after <= 0:
            return self._generated(state, event)
        fn = state.fast.get(event)
        if fn is None:
            # No lock: threads here at once keep the first one's counter (`setdefault` is
            # atomic), and a counter replaced by the generated function is not put back.
            fn = state.fast.setdefault(event, warming(self, state, event, self.hot_after))
        return fn

    def _general(self, event: str) -> Dispatch:
        """The engine's dispatch for `event` (kept per declared event)."""
        if type(event) is not str or event not in self.events:
            return general(event)
        step = self._chart_steps.get(event)
        if step is None:
            step = self._chart_steps[event] = general(event)
        return step

    def child_machine(self, name: str) -> Machine:
        """The machine of the child flow `name` (IR version 5), loaded on first use and kept;
        its instances are nodes of a tree of instances (children.py)."""
        machine = self._child_machines.get(name)
        if machine is None:
            with self._generating:
                machine = self._child_machines.get(name)
                if machine is None:
                    # (embedded as `to_json` writes a flow: members at their default left out)
                    raw = {"ir_version": 1, **self.child_flows[name]}
                    machine = Machine(raw, clock=self.clock, limits=self.limits)
                    machine.composes = machine.is_child = True
                    machine.leaf_chart = False
                    self._child_machines[name] = machine
        return machine

    def _generated(self, state: CState, event: str) -> Dispatch:
        """The generated function of (`state`, `event`), written now unless it was already."""
        # One thread at a time: the generated functions share one namespace and its names.
        with self._generating:
            fn = self._written.get((state.name, event))
            if fn is None:
                gen = self._generator
                if gen is None:
                    gen = self._generator = Generator(self)
                fn = self._written[state.name, event] = gen.dispatch(state, event)
            state.fast[event] = fn
        return fn

    # ---- instances --------------------------------------------------------------------------
    def start(
        self,
        context: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        clock: Clock | None = None,
    ) -> Instance:
        """A new instance in the initial state (routed onwards if that is a choice state).
        `context` gives the fields without defaults and may override the others; it is checked
        field by field. Raises `Rejected` (with `invalid_context` feedback, or the routing's
        rejection) when the instance cannot start; `try_start` returns it instead."""
        outcome = self.try_start(context, id=id, clock=clock)
        if isinstance(outcome, Rejection):
            raise Rejected(outcome)
        return outcome

    def try_start(
        self,
        context: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        clock: Clock | None = None,
    ) -> Instance | Rejection:
        from flowc.runtime.instance import Instance

        started = Instance._start(self, context, id, clock or self.clock)
        if not isinstance(started, Rejection) and started._tree is not None:
            from flowc.runtime.children import settle_start

            settle_start(started)  # what its children said and did as they started
        return started

    def restore(
        self,
        snapshot: Mapping[str, Any] | str | bytes,
        *,
        clock: Clock | None = None,
        drop_unknown: bool = False,
    ) -> Instance:
        """An instance from `Instance.snapshot()` output (a dict or its JSON). A snapshot of an
        older version of the flow loads when it fits: context fields added since are filled
        from their defaults, timers are matched to the flow's timer rules. Raises
        `SnapshotError` for another flow, a state that no longer exists, a context field that
        is missing without a default, or (unless `drop_unknown`) a field the flow dropped."""
        from flowc.runtime.instance import Instance

        return Instance._restore(self, snapshot, clock or self.clock, drop_unknown)

    # ---- messages ---------------------------------------------------------------------------
    def rejection(
        self,
        kind: str,
        state: CState,
        event: str | None,
        payload: Mapping[str, Any] | None,
        context: Mapping[str, Any],
        data: dict[str, Any] | None = None,
        *,
        code: str | None = None,
        template: str | None = None,
        data_of: tuple[Callable[..., dict[str, Any]], tuple[Any, ...]] | None = None,
        rule: int | None = None,
    ) -> Rejection:
        """A rejection with its message from the flow's template for `kind` (or the given one,
        for `reject` / `require`), rendered when first read: refusals are a hot path (agents
        make invalid calls all the time) and most are answered by their code. `context` and
        `payload` are never changed in place by the runtime, so rendering later sees what
        was true now; `data` is copied for the same reason. `data_of`, instead of `data`:
        `data_of[0](*data_of[1])` gives the data when it is first read (or the message is). `rule`:
        the index of the `reject` rule refusing."""
        source = template if template is not None else self.messages.get(kind, kind)
        if "{" not in source:  # no Jinja2 markup: the text is the message
            return Rejection.pending(
                kind, code or kind, state.name, event,
                message=source.strip(), data=data, data_of=data_of, rule=rule,
            )  # fmt: skip
        # The data the message sees: a copy of what is given now, else the data worked out.
        seen = None if data_of is not None else (dict(data) if data else _EMPTY)
        render = (self._message_text, (kind, state, event, payload, context, seen, code, source))
        return Rejection.pending(
            kind,
            code or kind,
            state.name,
            event,
            render=render,
            data=data,
            data_of=data_of,
            rule=rule,
        )

    def _message_text(
        self,
        rejection: Rejection,
        kind: str,
        state: CState,
        event: str | None,
        payload: Mapping[str, Any] | None,
        context: Mapping[str, Any],
        data: Mapping[str, Any] | None,
        code: str | None,
        source: str,
    ) -> str:
        if data is None:
            data = rejection.data
        variables: dict[str, Any] = {
            "state": wrap(state.view()),
            "event": EventVars(event, payload) if event is not None else None,
            "context": wrap(dict(context)),
            "payload": wrap(dict(payload)) if payload else {},
            "code": code or kind,
        }
        for k, v in data.items():
            variables[k] = wrap(v)
        return self._render_message(source, variables, kind)

    def _render_message(self, source: str, variables: Mapping[str, Any], kind: str) -> str:
        try:
            return self.template_cache.render(source, variables).strip()
        except Exception:
            # A message that cannot be rendered must not hide the rejection it explains: fall
            # back to the default text, then to the kind itself.
            default = DEFAULT_MESSAGES.get(kind)
            if default is not None and default != source:
                try:
                    return self.template_cache.render(default, variables).strip()
                except Exception:
                    pass
            return kind

    def __repr__(self) -> str:
        return f"<Machine {self.name} v{self.version} ({len(self.states)} states)>"


def _parse_json(text: str | bytes) -> Any:
    # pydantic-core's parser (a dependency already) is faster than the json module on large
    # files; it refuses a few inputs the json module reads (a byte order mark, UTF-16 bytes,
    # lone surrogates), which go to the json module, so what loads is unchanged.
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def _verify_hash(raw: dict[str, Any], text: str | bytes) -> None:
    expected = raw["hash"]
    # `flowc compile --compact` writes the canonical form itself, with the hash as one member:
    # without that member the text is exactly what was hashed, no re-serialising needed.
    body_text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    member = f',"hash":{json.dumps(expected)}'
    if member in body_text:
        candidate = body_text.replace(member, "", 1).strip()
        digest = "sha256:" + hashlib.sha256(candidate.encode("utf-8")).hexdigest()
        if digest == expected:
            return
    # (The members derived from others, `lowered_templates`, are not hashed: model.py.)
    body = {k: v for k, v in raw.items() if k not in UNHASHED_MEMBERS}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest() == expected:
        return
    # The file may spell out fields at their default values, which the canonical form leaves
    # out: let the IR model decide (it raises IRLoadError when the hash really differs).
    CompiledFlow.from_json(text)
