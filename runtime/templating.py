"""Sandboxed Jinja2 for messages, journals and prompt templates.

Every template of a flow runs in `ImmutableSandboxedEnvironment` (no attribute access to
internals, no mutation of the values passed in). Templates are compiled on first use and kept
per machine, so a 1,000-state flow does not pay for hundreds of templates at load time and a
template used on every step is compiled once.

Values reach templates wrapped so that `record.field` means the field even when it is called
`items`, `keys` or `values` (on a plain dict Jinja would find the dict's method first), and so
that `event` prints as the event's name while `event.field` reads its payload. A value that is
none prints as nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment


def _finalize(value: Any) -> Any:
    # `{{ reason }}` of a step without one prints nothing rather than "None".
    return "" if value is None else value


_ENV = ImmutableSandboxedEnvironment(finalize=_finalize)


class Record(dict[str, Any]):
    """A dict whose attributes are its keys first (`{{ payload.items }}` is the field)."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        if name[:1] != "_" and dict.__contains__(self, name):
            return wrap(dict.__getitem__(self, name))
        return dict.__getattribute__(self, name)

    def __getitem__(self, key: str) -> Any:
        return wrap(dict.__getitem__(self, key))


class EventVars(Record):
    """`event` in templates: prints as the event's name; its keys are the payload's fields."""

    __slots__ = ("_name",)

    def __init__(self, name: str, payload: Mapping[str, Any] | None) -> None:
        super().__init__(payload or ())
        self._name = name

    def __str__(self) -> str:
        return self._name

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self._name
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


def wrap(value: Any) -> Any:
    if type(value) is dict:
        return Record(value)
    if type(value) is list:
        return [wrap(v) for v in value] if any(type(v) is dict for v in value) else value
    return value


class TemplateCache:
    """Templates of one machine, compiled on first use and shared by all its instances."""

    __slots__ = ("_compiled",)

    def __init__(self) -> None:
        self._compiled: dict[str, Template] = {}

    def get(self, source: str) -> Template:
        found = self._compiled.get(source)
        if found is None:
            found = _shared(source)
            self._compiled[source] = found
        return found

    def render(self, source: str, variables: Mapping[str, Any]) -> str:
        return self.get(source).render(variables)


# The default message texts are the same for every machine: compile them once per process.
_SHARED: dict[str, Template] = {}


def _shared(source: str) -> Template:
    found = _SHARED.get(source)
    if found is None:
        found = _ENV.from_string(source)
        if len(_SHARED) < 256:
            _SHARED[source] = found
    return found
