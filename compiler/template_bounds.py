"""The environment the compiler checks a flow's Jinja2 templates with.

Jinja folds constant expressions while it compiles a template: `{{ 9**(9**9) }}` would be
computed by `flowc check` itself (forever), `{{ 'a' * 10**9 }}` would take gigabytes. The
checking environment compiles (finding syntax errors, unknown filters and tests) but folds
nothing a template could make expensive, so compiling costs time linear in the template's length
whatever it says. Which constants are too large is the runtime's one rule
(`flowc.runtime.templating.check_template`, under the default `Limits`): the compiler reports
what it finds as E210, so a template that would blow up when rendered is an error when the flow
compiles.
"""

from __future__ import annotations

from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import pass_context

_BINARY_OPERATORS = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_UNARY_OPERATORS = frozenset({"+", "-"})


class _CheckingEnvironment(ImmutableSandboxedEnvironment):
    # A sandbox does not fold an intercepted operator (jinja2.nodes.BinExpr.as_const); the
    # checking environment never renders, so intercepting every one only stops the folding.
    intercepted_binops = _BINARY_OPERATORS
    intercepted_unops = _UNARY_OPERATORS


def _unfoldable(function: Any) -> Any:
    """A stand-in with the filter's (or test's) name that Jinja may not call while compiling:
    a filter that takes the context is never folded (jinja2.nodes.Filter.as_const)."""

    @pass_context
    def never_called(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never rendered
        raise AssertionError("the checking environment does not render")

    return never_called


def checking_environment() -> ImmutableSandboxedEnvironment:
    env = _CheckingEnvironment()
    env.filters = {name: _unfoldable(f) for name, f in env.filters.items()}
    env.tests = {name: _unfoldable(f) for name, f in env.tests.items()}
    return env
