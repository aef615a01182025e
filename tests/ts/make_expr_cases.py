"""Expression cases for the TypeScript runtime, with the answers of the Python runtime.

Evaluates many IR expressions (every op and function, on ints, floats, big ints, strings with
non-ASCII text, lists, maps, none, booleans, and the faults between them) through
`flowc.runtime`'s expression compiler and writes each with its outcome to
runtime-ts/test/fixtures/expr_cases.json, which runtime-ts/test/expr_cases.test.ts replays:

    .venv/bin/python tests/ts/make_expr_cases.py

A result is written as `json.dumps` writes it (so `2` and `2.0` differ); a fault by its
`expression_error` detail (`describe_fault`); a limit by its `limit_exceeded` detail.
tests/ts/test_expr_cases.py checks that the committed file is what this script writes.
"""

from __future__ import annotations

import itertools
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowc.runtime.configuration import Surroundings, within
from flowc.runtime.expr import FAULTS, ExprCompiler, describe_fault
from flowc.runtime.limits import LimitExceeded, Limits

OUT = Path(__file__).resolve().parents[2] / "runtime-ts" / "test" / "fixtures" / "expr_cases.json"

Node = dict[str, Any]


def lit(v: Any) -> Node:
    return {"op": "lit", "value": v}


def ctx(name: str) -> Node:
    return {"op": "ctx", "value": name}


def ev(name: str) -> Node:
    return {"op": "event", "value": name}


def op(name: str, *args: Node, value: Any = None) -> Node:
    node: Node = {"op": name, "args": list(args)}
    if value is not None:
        node["value"] = value
    return node


def call(name: str, *args: Node) -> Node:
    return op("call", *args, value=name)


@dataclass(frozen=True)
class _State:
    name: str = "Review"
    title: str = "Review the draft"
    meta: dict[str, Any] = field(default_factory=lambda: {"panel": "left", "n": 2})
    ancestors: tuple[Any, ...] = ()


NUMBERS: list[Any] = [
    0, 1, -7, 3, 10, 2**53 + 1, 10**20, -(10**30), 2.5, -0.5, 2.0, -3.0, 0.1, 1e16, 1e-05,
    1.5e300, True, False,
]  # fmt: skip
OTHERS: list[Any] = [
    "", "abc", "ab", "héllo", "😀x", "a'b", "ÿ", "\uffff", "𝔘", [1, 2], [], [1, "a"], ["a", "b"],
    [[1], [2, 3]], {"a": 1}, {}, {"a": [1]}, None,
]  # fmt: skip
VALUES = NUMBERS + OTHERS
ARITHMETIC = ["+", "-", "*", "/", "%"]
COMPARISONS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
FUNCTIONS_1 = ["len", "abs", "round", "keys", "values", "lower", "upper", "trim", "str"]


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(expr: Node, c: dict[str, Any] | None = None, e: Any = None, **extra: Any) -> None:
        out.append({"expr": expr, "ctx": c or {}, "event": e, **extra})

    for o, (a, b) in itertools.product(ARITHMETIC, itertools.product(NUMBERS, NUMBERS)):
        add(op(o, ctx("a"), ctx("b")), {"a": a, "b": b})
    pairs = list(itertools.product(NUMBERS[::3] + OTHERS[::2], OTHERS[::2] + NUMBERS[::4]))
    for o in ARITHMETIC:
        for a, b in pairs[::3]:
            add(op(o, ctx("a"), ctx("b")), {"a": a, "b": b})
    sample = NUMBERS[::2] + OTHERS
    for o in COMPARISONS:
        for a, b in itertools.product(sample, sample):
            if (zlib.crc32(json.dumps([o, a, b]).encode()) % 5 == 0) or o in ("==", "<"):
                add(op(o, ctx("a"), ctx("b")), {"a": a, "b": b})
    for fn, v in itertools.product(FUNCTIONS_1, VALUES):
        add(call(fn, ctx("v")), {"v": v})
    for v in VALUES:
        add(op("neg", ctx("v")), {"v": v})
        add(op("not", ctx("v")), {"v": v})
        add(op("and", ctx("v"), lit("yes")), {"v": v})
        add(op("or", ctx("v"), lit("no")), {"v": v})
        add(op("cond", ctx("v"), lit(1), lit(2)), {"v": v})
        add(call("coalesce", ctx("v"), lit(0)), {"v": v})
    extra_strings = [
        "  x \t", "\x1c y\x85", "\ufeffz", "İ", "ß", "ǅ", "ΣΑΣ", "x\ny", "\x00", "é\x7f",
    ]  # fmt: skip
    for fn, s in itertools.product(["trim", "lower", "upper", "len", "str"], extra_strings):
        add(call(fn, ctx("v")), {"v": s})
    floats = [0.5, 1.5, 2.5, -2.5, 0.49999999999999994, 1e300, 123.456, -0.0, 1e22, 4.35, 1e-7]
    for f in floats:
        add(call("round", ctx("v")), {"v": f})
        add(call("str", ctx("v")), {"v": f})
    for a, b in itertools.product(VALUES[::2], VALUES[1::3]):
        add(call("min", ctx("a"), ctx("b")), {"a": a, "b": b})
        add(call("max", ctx("a"), ctx("b")), {"a": a, "b": b})
        add(call("merge", ctx("a"), ctx("b")), {"a": a, "b": b})
    add(call("min", lit(3), lit(1.0), lit(1), lit(2)))
    add(call("max", lit(1), lit(1.0), lit(True)))
    add(call("max", lit("b"), lit("ä"), lit("a")))
    _reads(add)
    _collections(add)
    _quantifiers(add)
    _limits(add)
    return out


def _reads(add: Any) -> None:
    c = {"n": 3, "r": {"a": 1, "b": None, "c": {"d": "e"}}, "xs": [10, 20, 30], "s": "héllo"}
    e = {"x": 1, "rec": {"status": "ok"}}
    for expr in [
        ctx("n"), ctx("missing"), ev("x"), ev("nope"), op("attr", ctx("r"), value="a"),
        op("attr", ctx("r"), value="zz"), op("attr", op("attr", ctx("r"), value="b"), value="q"),
        op("attr", op("attr", ctx("r"), value="c"), value="d"),
        op("attr", ev("rec"), value="status"),
        op("attr", ctx("xs"), value="a"), op("attr", ctx("n"), value="a"),
        {"op": "state", "value": "name"}, {"op": "state", "value": "title"},
        {"op": "meta", "value": "panel"}, {"op": "meta", "value": "n"},
        {"op": "meta", "value": "x"},
        call("event_name"), call("active", lit("Review")), call("active", lit("Other")),
    ]:  # fmt: skip
        add(expr, c, e)
    add(ev("x"), c, None)
    for key in [0, 2, 3, -1, True, 1.0, "a", None, 2**70]:
        add(op("index", ctx("xs"), ctx("k")), {**c, "k": key})
        add(op("index", ctx("s"), ctx("k")), {**c, "k": key})
        add(op("index", ctx("r"), ctx("k")), {**c, "k": key})
        add(op("index", ctx("none"), ctx("k")), {"none": None, "k": key})
        add(op("index", ctx("n"), ctx("k")), {**c, "k": key})
    add(op("index", ctx("r"), ctx("k")), {**c, "k": [1]})
    add(call("event_name"), c, e, scope={"active": ["Review", "Root"], "event": "submit"})
    add(call("active", lit("Root")), c, e, scope={"active": ["Review", "Root"], "event": None})
    add(call("active", lit("Gone")), c, e, scope={"active": ["Review"], "event": None})
    add(call("event_name"), c, e, scope={"active": ["Review"], "event": None})


def _collections(add: Any) -> None:
    add(op("list", lit(1), op("+", lit(1), lit(1.5)), lit("x"), lit(None)))
    add(op("map", lit("a"), lit(1), lit("b"), op("list", lit(2.0))))
    add(op("map", ctx("k"), lit(1), lit("k"), lit(2)), {"k": "k"})
    add(op("map", ctx("k"), lit(1)), {"k": "__proto__"})
    add(op("map", ctx("k"), lit(1)), {"k": [1]})
    add(op("in", lit("a"), op("map", lit("a"), lit(1))))
    add(op("in", lit(1.0), op("list", lit(1), lit(2))))
    add(op("in", lit([1]), op("list", op("list", lit(1.0)))))
    add(
        op(
            "==",
            op("map", lit("a"), lit(1), lit("b"), lit(2)),
            op("map", lit("b"), lit(2.0), lit("a"), lit(True)),
        )
    )
    add(call("keys", op("map", lit("b"), lit(1), lit("a"), lit(2))))
    add(call("values", op("map", lit("b"), lit(1), lit("a"), lit(2.0))))
    add(call("str", op("map", lit("b"), lit([1, 2.0, None, True, "x'y"]), lit("a"), lit({}))))
    add(call("str", lit(["a\nb", 'q"', "tab\t", "é", "\x07", "😀", "\u200b"])))
    add(op("*", lit("ab"), lit(3)))
    add(op("*", lit(3), lit([1, None])))
    add(op("*", lit([1]), lit(-2)))
    add(op("*", lit("ab"), lit(2.0)))
    add(op("*", lit("ab"), lit("cd")))
    add(op("*", lit([1]), lit([2])))
    add(op("+", lit([1]), op("list", lit(2))))
    add(op("<", lit([1, 2]), lit([1, 3])))
    add(op("<", lit([1, 2]), lit([1])))
    add(op(">=", lit([1, "a"]), lit([1, "b"])))
    add(op("<", lit([1, "a"]), lit([1, 2])))
    add(op("<", lit({"a": 1}), lit({"a": 2})))


def _quantifiers(add: Any) -> None:
    local = {"op": "local", "value": "x"}
    lists: list[Any] = [
        [1, 2, 3], [], [0, "", None], [2.5, 1, True], ["b", "a"], [[1], [0]], "xy", None, {"a": 1},
    ]  # fmt: skip
    bodies = {
        "any": op(">", local, lit(1)), "all": local, "count": local,
        "sum": local, "min": local, "max": local,
    }  # fmt: skip
    for kind, xs in itertools.product(bodies, lists):
        add(op(kind, ctx("xs"), bodies[kind], value="x"), {"xs": xs})
    add(op("sum", ctx("xs"), op("*", local, local), value="x"), {"xs": [1.5, 2, 10**20]})
    add(op("sum", ctx("xs"), local, value="x"), {"xs": [0.1, 0.2, 0.3]})
    add(op("any", ctx("xs"), op("==", local, ctx("n")), value="x"), {"xs": [1, 2], "n": 2})
    inner = op("any", ctx("ys"), op("==", local, {"op": "local", "value": "y"}), value="y")
    add(op("all", ctx("xs"), inner, value="x"), {"xs": [1, 2], "ys": [2, 1]})
    add(op("count", ctx("xs"), op(">", op("/", local, lit(0)), lit(1)), value="x"), {"xs": [1]})
    add(op("min", ctx("xs"), local, value="x"), {"xs": [3, 1.0, 1]})


def _limits(add: Any) -> None:
    small = {
        "max_int_digits": 5, "max_string": 8, "max_items": 4, "max_value_size": 20,
        "max_loop_iterations": 5, "max_depth": 3,
    }  # fmt: skip
    local = {"op": "local", "value": "x"}
    for expr, c in [
        (op("*", ctx("a"), ctx("b")), {"a": 999, "b": 999}),
        (op("*", ctx("a"), ctx("b")), {"a": 999, "b": 9999}),
        (op("*", ctx("a"), ctx("b")), {"a": 99999, "b": 99999}),
        (op("*", ctx("a"), ctx("b")), {"a": "abcd", "b": 2}),
        (op("*", ctx("a"), ctx("b")), {"a": "abcd", "b": 3}),
        (op("*", ctx("a"), ctx("b")), {"a": 5, "b": [1]}),
        (op("+", ctx("a"), ctx("b")), {"a": 99999, "b": 1}),
        (op("sum", ctx("xs"), local, value="x"), {"xs": [99999, 1]}),
        (op("sum", ctx("xs"), local, value="x"), {"xs": [1, 2, 3, 4, 5, 6]}),
        (op("any", ctx("xs"), op("any", ctx("xs"), local, value="y"), value="x"), {"xs": [0] * 3}),
        (op("sum", ctx("xs"), local, value="x"), {"xs": ["ab", "cd"]}),
    ]:  # fmt: skip
        add(expr, c, limits=small)
    add(op("*", ctx("a"), ctx("a")), {"a": 10**500})
    add(op("*", ctx("a"), ctx("a")), {"a": 10**499})
    add(op("*", ctx("a"), lit(1.0)), {"a": 10**400})
    add(op("/", ctx("a"), lit(10**300)), {"a": 10**400})


def outcome(case: dict[str, Any]) -> dict[str, Any]:
    limits = Limits(**case.get("limits", {}))
    fn = ExprCompiler(limits).compile(case["expr"])
    scope = case.get("scope")
    try:
        if scope is None:
            value = fn(dict(case["ctx"]), case["event"], _State())
        else:
            config = [_State(name=n) for n in scope["active"]]
            with within(Surroundings(config, scope["event"])):
                value = fn(dict(case["ctx"]), case["event"], _State())
    except LimitExceeded as exc:
        return {"limit": exc.detail}
    except FAULTS as exc:
        return {"fault": describe_fault(exc)}
    return {"result": json.dumps(value, ensure_ascii=False)}


def build() -> str:
    written = [{**case, **outcome(case)} for case in cases()]
    return json.dumps(written, ensure_ascii=False, indent=0) + "\n"


def main() -> int:
    from cases_file import write_cases  # beside this script, which runs from its folder

    return write_cases(OUT, build())


if __name__ == "__main__":
    sys.exit(main())
