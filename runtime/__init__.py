"""flowc.runtime: load compiled flows and run instances of them.

Imports only pydantic and jinja2 (never Lark, networkx or Graphviz), so it embeds lightly.
The names exported here are the stable API (docs/runtime.md says what that promises).

Each name is imported on first use (PEP 562): the compiler imports `flowc.runtime.model` and
`flowc.runtime.messages` only, and importing them must not load the machine, instances and
templating (jinja2), a tenth of `flowc check`'s start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowc.runtime.clock import Clock, FakeClock, system_clock
    from flowc.runtime.instance import Instance
    from flowc.runtime.limits import DEFAULT_LIMITS, Limits
    from flowc.runtime.machine import Machine
    from flowc.runtime.messages import DEFAULT_MESSAGES, MESSAGE_KINDS
    from flowc.runtime.model import IR_VERSION, CompiledFlow, FlowcError, IRLoadError
    from flowc.runtime.rejections import Rejected, Rejection, SnapshotError, UnknownTemplate
    from flowc.runtime.steps import AcceptedEvent, HistoryEntry, Outcome, StepResult
    from flowc.runtime.templating import TemplateError, TemplateLimitError

__version__ = "0.1.0"

#: exported name -> the module that defines it
_HOMES: dict[str, str] = {
    "Clock": "clock",
    "FakeClock": "clock",
    "system_clock": "clock",
    "AcceptedEvent": "instance",
    "HistoryEntry": "instance",
    "Instance": "instance",
    "Outcome": "instance",
    "StepResult": "instance",
    "DEFAULT_LIMITS": "limits",
    "Limits": "limits",
    "Machine": "machine",
    "DEFAULT_MESSAGES": "messages",
    "MESSAGE_KINDS": "messages",
    "IR_VERSION": "model",
    "CompiledFlow": "model",
    "FlowcError": "model",
    "IRLoadError": "model",
    "Rejected": "rejections",
    "Rejection": "rejections",
    "SnapshotError": "rejections",
    "UnknownTemplate": "rejections",
    "TemplateError": "templating",
    "TemplateLimitError": "templating",
}


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: a module `__getattr__` would make
    # them accept any name, a typo included.
    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            # Also how `from flowc.runtime import model` finds a submodule not imported yet.
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(f"{__name__}.{home}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MESSAGES",
    "IR_VERSION",
    "MESSAGE_KINDS",
    "AcceptedEvent",
    "Clock",
    "CompiledFlow",
    "FakeClock",
    "FlowcError",
    "HistoryEntry",
    "IRLoadError",
    "Instance",
    "Limits",
    "Machine",
    "Outcome",
    "Rejected",
    "Rejection",
    "SnapshotError",
    "StepResult",
    "TemplateError",
    "TemplateLimitError",
    "UnknownTemplate",
    "__version__",
    "system_clock",
]
