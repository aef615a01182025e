"""Template bombs are compile errors (E210), found without computing them: the compiler applies
the runtime's own check (`flowc.runtime.templating.check_template`, default `Limits`)."""

from __future__ import annotations

import time

import pytest

from flowc.compiler import compile_source
from flowc.runtime.limits import DEFAULT_LIMITS


def flow_with_message(template: str) -> str:
    return f'flow t\nevent go\ninitial state A {{\n  on go reject x "{template}"\n}}\n'


def codes(source: str) -> list[tuple[str, int, int]]:
    result = compile_source(source, "case.flow", lint=False)
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


@pytest.mark.parametrize(
    "template",
    [
        "{{ 9**(9**9) }}",
        "{{ 'a'*10**9 }}",
        "{{ 10**9 * 'a' }}",
        "{{ [0] * 10**9 }}",
        "{% for i in range(10**9) %}x{% endfor %}",
        "{{ 'a'|center(10**9) }}",
        "{{ 'a'|indent(width=10**9) }}",
        "{{ (2**4000) * (2**4000) }}",
        "{% set big = 7 ** 99999 %}{{ big }}",
        "{{ ('a' * 600000) ~ ('b' * 600000) }}",
        "{{ ('a' * 600000) + ('b' * 600000) }}",
        "{{ '%099999999d' % 1 }}",
        "{{ 'ab'" + "|replace('a', 'aaaaaaaaaa')" * 9 + " }}",
    ],
)
def test_a_constant_bomb_is_refused_at_its_text_quickly(template: str) -> None:
    started = time.process_time()  # CPU time: the work done, whatever else the machine runs
    found = codes(flow_with_message(template))
    assert time.process_time() - started < 5
    assert found == [("E210", 4, 18)]


def test_the_bounds_are_inclusive_and_ordinary_constants_pass() -> None:
    digits, chars = DEFAULT_LIMITS.max_int_digits, DEFAULT_LIMITS.max_string
    within = (
        f"{{{{ 10 ** {digits - 1} }}}} {{{{ 'a' * {chars} }}}} "
        "{{ range(3)|list }} {{ 'a'|center(20) }} {{ -(3 ** 4) / 2 }} {{ 'x' ~ 1 + 2 }} "
        "{{ not 5 }} {{ 2 ** -3 }} {{ 1.5 ** 99999 }} {{ 1 / 0 }}"
    )
    assert codes(flow_with_message(within)) == []


def test_a_bomb_on_a_later_line_of_a_long_text_is_reported_on_its_line() -> None:
    source = (
        'flow t\nevent go\ninitial state A {\n  on go reject x """\nok\n{{ 9**99999 }}\n"""\n}\n'
    )
    assert codes(source) == [("E210", 6, 1)]


def test_the_compiler_applies_the_runtimes_limits() -> None:
    # One rule for both: a constant the runtime would refuse to compute is E210 in the source,
    # with the runtime's own words.
    found = compile_source(flow_with_message("{{ [0] * 10**9 }}"), "case.flow", lint=False)
    (diag,) = found.diagnostics
    assert diag.code == "E210"
    assert diag.message.endswith("1,000,000,000 items; at most 100,000")


def test_unknown_filters_are_still_syntax_errors() -> None:
    assert codes(flow_with_message("{{ 1|no_such_filter }}")) == [("E206", 4, 18)]


def test_a_number_past_pythons_digit_limit_in_a_template_is_e209() -> None:
    assert codes(flow_with_message("{{ 1" + "0" * 5000 + " }}")) == [("E209", 4, 18)]
