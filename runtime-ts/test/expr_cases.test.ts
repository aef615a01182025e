// Every expression case evaluated by the Python runtime (tests/ts/make_expr_cases.py) gives
// the same result, fault or limit here.
import { describe, expect, it } from "vitest";
import { describeFault, evaluate, ExprFault, LimitExceeded, newEnv, type Scope } from "../src/expr.js";
import { dumps } from "../src/values.js";
import { limitsOf, loadCases } from "./cases.js";

interface ExprCase {
  expr: unknown;
  ctx: Record<string, unknown>;
  event: unknown;
  limits?: Record<string, number>;
  scope?: { active: string[]; event: string | null };
  result?: string;
  fault?: string;
  limit?: string;
}

const CASES = loadCases<ExprCase>("expr_cases.json");
const STATE = { name: "Review", title: "Review the draft", meta: { panel: "left", n: 2 } };

function outcome(c: ExprCase): { result?: string; fault?: string; limit?: string } {
  const scope: Scope = { c: { ...c.ctx }, e: c.event, s: STATE };
  const env = newEnv({ limits: limitsOf(c.limits) });
  if (c.scope) {
    const active = c.scope.active;
    env.active = (name) => active.includes(name);
    env.eventName = c.scope.event;
  }
  try {
    return { result: dumps(evaluate(c.expr, scope, env)) };
  } catch (e) {
    if (e instanceof LimitExceeded) return { limit: e.detail };
    if (e instanceof ExprFault) return { fault: describeFault(e) };
    throw e;
  }
}

function opOf(c: ExprCase): string {
  const node = c.expr as { op: string; value?: unknown };
  return node.op === "call" ? `call ${String(node.value)}` : node.op;
}

const GROUPS = new Map<string, ExprCase[]>();
for (const c of CASES) GROUPS.set(opOf(c), [...(GROUPS.get(opOf(c)) ?? []), c]);

describe("expressions evaluate as in the Python runtime", () => {
  it("has several hundred cases", () => {
    expect(CASES.length).toBeGreaterThan(500);
  });
  it.each([...GROUPS.keys()])("%s", (group) => {
    const wrong = [];
    for (const c of GROUPS.get(group) ?? []) {
      const expected = c.result !== undefined ? { result: c.result } : c.fault !== undefined ? { fault: c.fault } : { limit: c.limit };
      const got = outcome(c);
      if (dumps(got) !== dumps(expected)) wrong.push({ expr: dumps(c.expr), ctx: dumps(c.ctx), got, expected });
    }
    expect(wrong.slice(0, 15)).toEqual([]);
  });
});
