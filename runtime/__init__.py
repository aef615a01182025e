"""flowc.runtime: load compiled flows and run instances of them.

Imports only pydantic and jinja2 (never Lark, networkx or Graphviz), so it embeds lightly.
The names exported here are the stable API (docs/runtime.md says what that promises).
"""

from flowc.runtime.clock import Clock, FakeClock, system_clock
from flowc.runtime.instance import (
    AcceptedEvent,
    HistoryEntry,
    Instance,
    Outcome,
    StepResult,
)
from flowc.runtime.limits import DEFAULT_LIMITS, Limits
from flowc.runtime.machine import Machine
from flowc.runtime.messages import DEFAULT_MESSAGES, MESSAGE_KINDS
from flowc.runtime.model import IR_VERSION, CompiledFlow, FlowcError, IRLoadError
from flowc.runtime.rejections import Rejected, Rejection, SnapshotError, UnknownTemplate
from flowc.runtime.templating import TemplateError, TemplateLimitError

__version__ = "0.1.0"

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
