"""Refusals as data, and the few exceptions the runtime raises.

A step that is refused returns a `Rejection`: hosts switch on `code`, show `message`, and read
the kind's own fields from `data` (`from`/`to` of an invalid transition, the field-level
`issues` of an invalid payload, ...). Refusals are expected outcomes, so they are never raised;
`Rejection.unwrap()` / `Outcome.unwrap()` turn one into a `Rejected` exception for hosts that
prefer exceptions.

Exceptions (`FlowcError` and its subclasses) are for programmer errors: a compiled flow that
cannot be loaded (`IRLoadError`), a snapshot that does not fit (`SnapshotError`), an unknown
template name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from flowc.runtime.limits import storable, text_problem
from flowc.runtime.model import FlowcError, IRLoadError

#: `Rejection.kind` of a domain refusal written in the flow: `on E ... reject CODE "..."`.
REJECT: Final = "reject"
#: `Rejection.kind` of a failed event precondition: `event E(...) require C else CODE "..."`.
REQUIRE: Final = "require"

INVALID_PAYLOAD: Final = "invalid_payload"
INVALID_CONTEXT: Final = "invalid_context"
UNKNOWN_EVENT: Final = "unknown_event"
#: An event declared `internal`, sent by a host: only the flow itself may send it.
INTERNAL_EVENT: Final = "internal_event"
EVENT_NOT_ACCEPTED: Final = "event_not_accepted"
#: Not a refusal: a state that says `unhandled ignore` had no rule for the event; nothing changed.
IGNORED: Final = "ignored"
GUARD_FAILED: Final = "guard_failed"
UNKNOWN_STATE: Final = "unknown_state"
#: A step addressed to a child instance (`DurableFlows.send(..., child=PATH)`) that the
#: instance does not have (never started, or its state was left).
UNKNOWN_CHILD: Final = "unknown_child"
INVALID_TRANSITION: Final = "invalid_transition"
BACKWARD_REQUIRES_FORCE: Final = "backward_requires_force"
NO_PREVIOUS_STATE: Final = "no_previous_state"
INSTANCE_FINAL: Final = "instance_final"
ROUTING_LOOP: Final = "routing_loop"
EXPRESSION_ERROR: Final = "expression_error"
LIMIT_EXCEEDED: Final = "limit_exceeded"
INVALID_ARGUMENT: Final = "invalid_argument"
INVARIANT_VIOLATED: Final = "invariant_violated"

#: The fields `Rejection.to_dict()` gives every rejection; the data a flow attaches to its own
#: refusals (`with {...}`) cannot use these names.
REJECTION_FIELDS: Final = frozenset({"ok", "error", "message", "kind", "state", "event"})


class Rejection:
    """A refused step. Nothing about the instance changed.

    `kind`: one of the runtime's kinds (`flowc.runtime.messages.MESSAGE_KINDS`), or `reject` /
    `require` for refusals written in the flow. `code`: what the host reports; the kind
    itself, or the flow's CODE for `reject` / `require`. `message`: the rendered text.
    `state`: the instance's state when it was refused. `event`: the event's name (None for
    `goto`, `back` and `start`). `data`: the kind's own fields (see docs/runtime.md). `rule`:
    for a `reject`, the IR index (`Transition.index`) of the rule that refused; else None.

    The runtime makes rejections whose message is rendered when it is first read (`message`,
    `to_dict()`, `repr`), from what was true when the step was refused: a refusal nobody
    reads costs no template rendering. The field-level feedback of an invalid payload is
    likewise worked out when `data` is first read.
    """

    __slots__ = (
        "_data",
        "_data_of",
        "_message",
        "_render",
        "code",
        "event",
        "kind",
        "rule",
        "state",
    )

    ok: Final = False

    def __init__(
        self,
        kind: str,
        code: str,
        message: str,
        state: str | None,
        event: str | None = None,
        data: dict[str, Any] | None = None,
        rule: int | None = None,
    ) -> None:
        self.kind = kind
        self.rule = rule
        self.code = code
        self._message: str | None = message
        self._render: tuple[Callable[..., str], tuple[Any, ...]] | None = None
        self.state = state
        self.event = event
        self._data: dict[str, Any] | None = data if data is not None else {}
        self._data_of: tuple[Callable[..., dict[str, Any]], tuple[Any, ...]] | None = None

    @classmethod
    def pending(
        cls,
        kind: str,
        code: str,
        state: str | None,
        event: str | None,
        *,
        message: str | None = None,
        render: tuple[Callable[..., str], tuple[Any, ...]] | None = None,
        data: dict[str, Any] | None = None,
        data_of: tuple[Callable[..., dict[str, Any]], tuple[Any, ...]] | None = None,
        rule: int | None = None,
    ) -> Rejection:
        """A rejection whose message is `message`, or `render[0](rejection, *render[1])` called
        when first read; whose data is `data`, or `data_of[0](*data_of[1])` called when first
        read."""
        self: Rejection = object.__new__(cls)
        self.kind = kind
        self.code = code
        self._message = message
        self._render = render
        self.state = state
        self.event = event
        self._data = None if data_of is not None else (data if data is not None else {})
        self._data_of = data_of
        self.rule = rule
        return self

    @property
    def message(self) -> str:
        text = self._message
        if text is None:
            pending = self._render
            if pending is None:  # another thread rendered it meanwhile
                text = self._message
                assert text is not None
                return text
            text = self._message = pending[0](self, *pending[1])
            self._render = None  # what it held (context, payload) is not kept alive
        return text

    @message.setter
    def message(self, text: str) -> None:
        self._message = text
        self._render = None

    @property
    def data(self) -> dict[str, Any]:
        data = self._data
        if data is None:
            pending = self._data_of
            if pending is None:  # another thread worked it out meanwhile
                data = self._data
                assert data is not None
                return data
            data = self._data = pending[0](*pending[1])
            self._data_of = None
        return data

    @data.setter
    def data(self, data: dict[str, Any]) -> None:
        self._data = data
        self._data_of = None

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def feedback(self) -> dict[str, Any] | None:
        """For `invalid_payload` / `invalid_context`: the validation feedback in seed 003's
        shape and field order (`result`, `issues`, `issue_count`, `action`); else None."""
        if "issues" not in self.data:
            return None
        keys = ("result", "issues", "issue_count", "issues_left_out", "action")
        return {k: self.data[k] for k in keys if k in self.data}

    def to_dict(self) -> dict[str, Any]:
        """`{"error": code, "message": ..., <kind's fields>, "kind", "state", "event"}`: the
        shape of seed 000's `stage_error` bodies, ready for JSON."""
        out: dict[str, Any] = {"ok": False, "error": self.code, "message": self.message}
        out.update(self.data)
        out["kind"] = self.kind
        out["state"] = self.state
        out["event"] = self.event
        for k, v in out.items():
            if type(v) is str and text_problem(v) is not None:
                out[k] = storable(v)  # a NUL or a lone surrogate a host sent, say as a name
        return out

    def unwrap(self) -> Any:
        raise Rejected(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles carry the rendered message, not the machine that renders it.
        return (type(self), (self.kind, self.code, self.message, self.state, self.event, self.data))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rejection):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rejection({self.code!r}, {self.message!r})"


class Rejected(FlowcError):
    """Raised by `unwrap()` and by `Machine.start` when starting is refused; carries the data."""

    def __init__(self, rejection: Rejection) -> None:
        super().__init__(f"{rejection.code}: {rejection.message}")
        self.rejection = rejection


class SnapshotError(FlowcError, ValueError):
    """A snapshot that cannot be restored into this machine."""


class UnknownTemplate(FlowcError, KeyError):
    """`Instance.render(name)` for a template the flow does not declare."""


__all__ = [
    "BACKWARD_REQUIRES_FORCE",
    "EVENT_NOT_ACCEPTED",
    "EXPRESSION_ERROR",
    "GUARD_FAILED",
    "IGNORED",
    "INSTANCE_FINAL",
    "INTERNAL_EVENT",
    "INVALID_ARGUMENT",
    "INVALID_CONTEXT",
    "INVALID_PAYLOAD",
    "INVALID_TRANSITION",
    "LIMIT_EXCEEDED",
    "NO_PREVIOUS_STATE",
    "REJECT",
    "REJECTION_FIELDS",
    "REQUIRE",
    "ROUTING_LOOP",
    "UNKNOWN_CHILD",
    "UNKNOWN_EVENT",
    "UNKNOWN_STATE",
    "FlowcError",
    "IRLoadError",
    "Rejected",
    "Rejection",
    "SnapshotError",
    "UnknownTemplate",
]
