"""The step-output collector: scoped to one block, nested blocks do not leak."""

from __future__ import annotations

from flowc.runtime.outputs import StepOutputs, collecting, current_outputs


def test_collector_is_scoped_to_the_block() -> None:
    assert current_outputs() is None
    with collecting() as out:
        assert current_outputs() is out
        out.raised.append(("tick", None))
        with collecting() as inner:
            assert current_outputs() is inner
        assert current_outputs() is out
    assert current_outputs() is None
    assert out.raised == [("tick", None)]


def test_collecting_reuses_a_given_collector() -> None:
    given = StepOutputs()
    with collecting(given) as out:
        assert out is given
