"""The embedding example of docs/runtime.md runs as written (with the flow's path filled in)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_embedding_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "runtime.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", text, re.S)
    assert example is not None
    code = example.group(1).replace(
        '"build/attempt_v2.json"', repr(str(ROOT / "flows" / "attempt_v2.flow"))
    )
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/runtime.md", "exec"), namespace)
    created = namespace["create_attempt"]("a1", "EXPERT")
    assert created == {"step": "UNDERSTAND", "label": "Understand", "hints_left": 3}
    assert "skip" in [t["name"] for t in namespace["tools_for"]("a1")]
    moved = namespace["call_tool"]("a1", "skip", {}, "req-1")
    assert moved == {"ok": True, "step": "PLAN", "label": "Plan", "hints_left": 3}
    assert '"to": "PLAN"' in capsys.readouterr().out
    refused = namespace["call_tool"]("a1", "request_hint", {}, "req-2")
    assert refused["ok"] is False and refused["error"] == "event_not_accepted"
