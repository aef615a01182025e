"""Template bombs are compile errors (E210), found without computing them."""

from __future__ import annotations

import time

import pytest

from flowc.compiler import compile_source
from flowc.compiler.template_bounds import MAX_INT_BITS, MAX_REPEAT_SIZE


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
        "{{ ('a' * 60000) ~ ('b' * 60000) }}",
        "{{ ('a' * 60000) + ('b' * 60000) }}",
    ],
)
def test_a_constant_bomb_is_refused_at_its_text_quickly(template: str) -> None:
    started = time.perf_counter()
    found = codes(flow_with_message(template))
    assert time.perf_counter() - started < 5
    assert found == [("E210", 4, 18)]


def test_the_bounds_are_inclusive_and_ordinary_constants_pass() -> None:
    within = (
        f"{{{{ 2 ** {MAX_INT_BITS - 1} }}}} {{{{ 'a' * {MAX_REPEAT_SIZE} }}}} "
        "{{ range(3)|list }} {{ 'a'|center(20) }} {{ -(3 ** 4) / 2 }} {{ 'x' ~ 1 + 2 }} "
        "{{ not 5 }} {{ 2 ** -3 }} {{ 1.5 ** 99999 }} {{ 1 / 0 }}"
    )
    assert codes(flow_with_message(within)) == []


def test_a_bomb_on_a_later_line_of_a_long_text_is_reported_on_its_line() -> None:
    source = (
        'flow t\nevent go\ninitial state A {\n  on go reject x """\nok\n{{ 9**99999 }}\n"""\n}\n'
    )
    assert codes(source) == [("E210", 6, 1)]


def test_a_template_is_compiled_without_folding_what_it_cannot_bound() -> None:
    # `%` formatting and chained `replace` are not evaluated by the check, and Jinja must not
    # fold them while compiling either: the check stays fast, rendering bounds them at run time.
    chain = "|replace('a', 'aaaaaaaaaa')" * 9
    template = "{{ '%099999999d' % 1 }}{{ 'ab'" + chain + " }}"
    started = time.perf_counter()
    assert codes(flow_with_message(template)) == []
    assert time.perf_counter() - started < 5


def test_unknown_filters_are_still_syntax_errors() -> None:
    assert codes(flow_with_message("{{ 1|no_such_filter }}")) == [("E206", 4, 18)]


def test_a_number_past_pythons_digit_limit_in_a_template_is_e209() -> None:
    assert codes(flow_with_message("{{ 1" + "0" * 5000 + " }}")) == [("E209", 4, 18)]
