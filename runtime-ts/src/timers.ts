// Pending timers: (due in epoch milliseconds, the rule), soonest first; timers due together
// innermost state first, then document order (as an event's rules are tried).
import type { Ctx, Exec, StepScope } from "./engine.js";
import { ExprFault } from "./expr.js";
import type { Rule, StateNode } from "./tree.js";

export type Timer = readonly [number, Rule];

/** The longest a computed delay may be (about 100 years). */
export const MAX_DELAY_MS = 36_500 * 86_400_000;

function compareRank(a: Timer, b: Timer): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  const [x, y] = [a[1].rank, b[1].rank];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

export function dueOrder(timers: Timer[]): Timer[] {
  return timers.sort(compareRank);
}

function typeWord(v: unknown): string {
  if (v === null || v === undefined) return "none";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (typeof v === "string") return "str";
  if (Array.isArray(v)) return "list";
  if (typeof v === "object" && v.constructor.name === "Float") return "float";
  return "dict";
}

/** The delay of `t` in milliseconds: its constant one, or its expression evaluated on `c`
 * (an int of milliseconds; below 1 counts as 1; past `MAX_DELAY_MS` a fault). */
export function delayOf(t: Rule, exec: Exec, c: Ctx, scope: StepScope): number {
  if (t.afterMs !== null) return t.afterMs;
  const node = t.def.after_expr;
  if (node === null) return 0;
  let ms = exec.value(node, c, null, t.source, scope);
  if (typeof ms === "bigint") ms = Number(ms);
  if (typeof ms !== "number" || !Number.isInteger(ms)) {
    throw new ExprFault(`the delay of ${t.describe()} is not an int (${typeWord(ms)})`);
  }
  if (ms > MAX_DELAY_MS) {
    throw new ExprFault(`the delay of ${t.describe()} is ${ms.toLocaleString("en-US")} ms, longer than any timer may wait`);
  }
  return Math.max(ms, 1);
}

/** A computed delay that faulted, and the state of its timer (the refusal names it). */
export class DelayFault extends Error {
  override name = "DelayFault";
  constructor(
    readonly fault: unknown,
    readonly state: StateNode,
  ) {
    super("a timer's delay faulted");
  }

  /** where the step faulted, in the Python runtime's words */
  get where(): string {
    return `the delay of a timer of ${this.state.name}`;
  }
}

/** Arm `rules` at `now` (constant delays, or computed ones evaluated against `c`); throws a
 * `DelayFault`. */
export function arm(rules: readonly Rule[], now: number, exec: Exec, c: Ctx, scope: StepScope): Timer[] {
  const out: Timer[] = [];
  for (const t of rules) {
    if (t.afterMs === null && t.def.after_expr === null) continue;
    try {
      out.push([now + delayOf(t, exec, c, scope), t]);
    } catch (exc) {
      throw new DelayFault(exc, t.source);
    }
  }
  return out;
}
