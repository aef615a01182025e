"""An instance's diagram: the flow drawn by Graphviz (`compiler/emit/dot.py`, as `flowc render`
draws it) with the instance's active states and the path its stored snapshot records
highlighted. Drawings are kept by graph and record version: a page that polls redraws nothing
until the instance steps."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from flowc.compiler.emit.dot import render, to_dot
from flowc.compiler.emit.snapshot import snapshot_highlight
from flowc.runtime.machine import Machine
from flowc.runtime.model import CompiledFlow
from flowc.runtime.store import InstanceRecord

#: Drawings kept (an SVG is tens of kilobytes).
KEPT = 64

_drawn: OrderedDict[tuple[str, str, int], bytes] = OrderedDict()
_lock = threading.Lock()


def instance_svg(machine: Machine, record: InstanceRecord) -> bytes:
    key = (machine.hash, record.id, record.version)
    with _lock:
        svg = _drawn.get(key)
    if svg is None:
        flow = CompiledFlow.from_json(json.dumps(machine.raw))
        svg = render(to_dot(flow, highlight=snapshot_highlight(record.snapshot)), "svg")
        with _lock:
            _drawn[key] = svg
            while len(_drawn) > KEPT:
                _drawn.popitem(last=False)
    return svg
