"""The compiled child-flow fixtures of runtime-ts/test/children.test.ts are what `flowc compile`
writes for their .flow files today (regenerate: `flowc compile X.flow -o X.json` in
runtime-ts/test/fixtures/children/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "runtime-ts" / "test" / "fixtures" / "children"


@pytest.mark.parametrize("compiled", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_a_fixture_is_up_to_date(compiled: Path, tmp_path: Path) -> None:
    fresh = tmp_path / compiled.name
    assert main(["compile", str(compiled.with_suffix(".flow")), "-o", str(fresh)]) == 0
    assert fresh.read_text(encoding="utf-8") == compiled.read_text(encoding="utf-8")
