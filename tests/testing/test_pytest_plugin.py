"""The pytest plugin collects .flow test blocks only when asked to (entry point `flowc`)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

FLOW = """flow door
event open
initial state CLOSED { on open -> OPEN }
final state OPEN

test "opens" {
  send open
  expect state OPEN
}

test "opens twice" {
  send open
  send open
}
"""


def test_flow_tests_are_collected_beside_python_tests(pytester: pytest.Pytester) -> None:
    pytester.makefile(".flow", door=FLOW)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_inprocess("--flow-tests", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*door.flow::opens PASSED*",
            "*door.flow::opens twice FAILED*",
            "*door.flow:13:3: refused with `instance_final`*",
            "*send open*",
            "*^^^^^^^^^*",
        ]
    )


def test_nothing_is_collected_unless_enabled(pytester: pytest.Pytester) -> None:
    pytester.makefile(".flow", door=FLOW)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nflow_tests = true\n")
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=2, failed=1)


def test_a_flow_that_does_not_compile_is_one_failure(pytester: pytest.Pytester) -> None:
    pytester.makefile(".flow", door=FLOW.replace("send open\n  send open", "send opn"))
    result = pytester.runpytest_inprocess("--flow-tests")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*does not compile*", "*E105*unknown event `opn`*"])
