/**
 * Guards and values: the IR's expressions interpreted with the Python runtime's semantics
 * (runtime/expr.py). Nothing evaluates text: each node is read from the IR as it is.
 *
 * An expression is evaluated in a `Scope` (the context being worked on, the event payload or
 * null, the current state) and an `Env` (the machine's limits, the step's budget and
 * outputs, what `active()` and `event_name()` read). Faults in the data throw `ExprFault`
 * (an `expression_error` rejection) or `LimitExceeded` (a `limit_exceeded` one), worded as
 * the Python runtime words them. Actions are in actions.ts; `runActions` is re-exported here.
 */
import { BUILTINS, extreme, FUNCTIONS, QUANTIFIERS } from "./builtins.js";
import { ExprFault, IRLoadError, typeError } from "./faults.js";
import { DEFAULT_LIMITS, LimitExceeded, type Limits } from "./limits.js";
import { add, BINARY, neg } from "./operators.js";
import type { Type } from "./types.js";
import { codePoints, grouped, hasKey, isDict, repr, setKey, truthy, typeName, type Dict } from "./values.js";

export { ExprFault, IRLoadError, describeFault } from "./faults.js";
export { LimitExceeded } from "./limits.js";

/** What expressions read of the current state. */
export interface StateView {
  readonly name: string;
  readonly title: string;
  readonly meta: Readonly<Record<string, unknown>>;
  /** The state's ancestors' names, innermost first (for `active` outside a statechart step). */
  readonly ancestors?: readonly string[];
}

/** The context being worked on (changed in place by actions), the payload, the state. */
export interface Scope {
  c: Record<string, unknown>;
  e: unknown;
  s: StateView;
}

/** The work a step has done against its bounds (runtime/outputs.py `StepOutputs`). */
export interface Budget {
  iterations: number;
  outputs: number;
  size: number;
}

export function newBudget(): Budget {
  return { iterations: 0, outputs: 0, size: 0 };
}

/** An effect emitted or an event raised: its name and payload (null: a raise without one). */
export type Output = [name: string, payload: Record<string, unknown> | null];

/** One `send` (`event` set: its payload, delay in ms and id or null) or `cancel` (`event`
 * null: the id) run by a step's actions, applied by the engine at the commit; with `to`, a
 * message to the parent (`"parent"`) or an invoke's children (its id), delivered after the
 * step (src/children.ts). */
export interface Scheduling {
  id: string | null;
  event: string | null;
  payload: Record<string, unknown> | null;
  delayMs: number;
  to?: string;
}

export interface Env {
  limits: Limits;
  /** Whether a state (its IR name) is active now; absent: the state evaluated in and its
   * ancestors are (a flat flow). */
  active?: (state: string) => boolean;
  /** The name of the event being processed, null when the step has none. */
  eventName?: string | null;
  budget: Budget;
  effects: Output[];
  raised: Output[];
  /** `send` and `cancel` in the order they ran (absent: outside a step, where they are refused) */
  scheduled?: Scheduling[];
  /** The type of the context path an action stores to; absent: values are stored as they are. */
  targetType?: (path: readonly string[]) => Type;
  /** The effects an `emit` may name (absent: any). */
  declaredEffects?: ReadonlySet<string>;
}

export function newEnv(opts: Partial<Env> = {}): Env {
  return { limits: DEFAULT_LIMITS, budget: newBudget(), effects: [], raised: [], ...opts };
}

/** A local's key in the context its body is evaluated with: no field's name starts with it. */
export const LOCAL_PREFIX = "%";

export type Node = Readonly<{ op?: unknown; args?: readonly unknown[]; value?: unknown }>;

function asNode(node: unknown): Node {
  if (!isDict(node)) throw new IRLoadError(`an expression must be an object, got ${repr(node)}`);
  return node;
}

function nameOf(value: unknown, op: string): string {
  if (typeof value !== "string") throw new IRLoadError(`\`${op}\` needs a name, got ${repr(value)}`);
  return value;
}

function argsOf(n: Node, op: string, count?: number): readonly unknown[] {
  const args = n.args ?? [];
  if (count !== undefined && args.length !== count) {
    throw new IRLoadError(`\`${op}\` takes ${String(count)} operand(s), got ${String(args.length)}`);
  }
  return args;
}

function keyError(key: unknown): ExprFault {
  return new ExprFault(`KeyError: ${repr(key)}`);
}

function readField(holder: unknown, key: string): unknown {
  if (holder === null || holder === undefined) throw typeError("'NoneType' object is not subscriptable");
  if (!isDict(holder) || !hasKey(holder, key)) throw keyError(key);
  return holder[key];
}

/** The value of expression `node`. */
export function evaluate(node: unknown, scope: Scope, env: Env): unknown {
  const n = asNode(node);
  const op = n.op;
  switch (op) {
    case "lit":
      return n.value ?? null;
    case "ctx":
      return readField(scope.c, nameOf(n.value, op));
    case "event":
      return readField(scope.e, nameOf(n.value, op));
    case "local":
      return readField(scope.c, LOCAL_PREFIX + nameOf(n.value, op));
    case "state":
      if (n.value === "name") return scope.s.name;
      if (n.value === "title") return scope.s.title;
      throw new IRLoadError(`\`state.${String(n.value)}\` is not readable in expressions`);
    case "meta": {
      const key = nameOf(n.value, op);
      return hasKey(scope.s.meta, key) ? scope.s.meta[key] : null;
    }
    case "and": {
      const [a, b] = argsOf(n, op, 2);
      const left = evaluate(a, scope, env);
      return truthy(left) ? evaluate(b, scope, env) : left;
    }
    case "or": {
      const [a, b] = argsOf(n, op, 2);
      const left = evaluate(a, scope, env);
      return truthy(left) ? left : evaluate(b, scope, env);
    }
    case "not":
      return !truthy(evaluate(argsOf(n, op, 1)[0], scope, env));
    case "neg":
      return neg(evaluate(argsOf(n, op, 1)[0], scope, env));
    case "cond": {
      const [test, then, other] = argsOf(n, op, 3);
      return evaluate(truthy(evaluate(test, scope, env)) ? then : other, scope, env);
    }
    case "attr":
      return attr(evaluate(argsOf(n, op, 1)[0], scope, env), nameOf(n.value, op));
    case "index": {
      const [o, k] = argsOf(n, op, 2);
      return index(evaluate(o, scope, env), evaluate(k, scope, env));
    }
    case "call":
      return call(nameOf(n.value, op), argsOf(n, op), scope, env);
    case "list":
      return argsOf(n, op).map((a) => evaluate(a, scope, env));
    case "map":
      return mapOf(argsOf(n, op), scope, env);
    default:
      return operation(n, scope, env);
  }
}

function operation(n: Node, scope: Scope, env: Env): unknown {
  const op = n.op;
  if (typeof op === "string") {
    const fn = BINARY[op];
    if (fn !== undefined) {
      const [a, b] = argsOf(n, op, 2);
      return fn(evaluate(a, scope, env), evaluate(b, scope, env), env.limits);
    }
    if (QUANTIFIERS.includes(op)) return quantified(n, op, scope, env);
  }
  throw new IRLoadError(`unknown expression op ${repr(op)}`);
}

function attr(o: unknown, key: string): unknown {
  if (isDict(o) && hasKey(o, key)) return o[key];
  if (o === null) throw new ExprFault(`cannot read \`.${key}\` of none`);
  throw new ExprFault(`the value has no field \`${key}\``);
}

/** `o[k]`: a list's item, a map's value (or a string's character, as Python allows). */
export function index(o: unknown, k: unknown): unknown {
  if (Array.isArray(o)) {
    if (typeof k !== "number" || !Number.isInteger(k) || k < 0 || k >= o.length) {
      throw new ExprFault(`index ${repr(k)} is out of range for a list of ${String(o.length)} items`);
    }
    return o[k];
  }
  if (o === null) throw new ExprFault("cannot index none");
  if (isDict(o)) {
    if (Array.isArray(k) || isDict(k)) throw typeError(`unhashable type: '${typeName(k)}'`);
    if (typeof k === "string" && hasKey(o, k)) return o[k];
    throw new ExprFault(`no key ${repr(k)} in the map`);
  }
  if (typeof o === "string") return charAt(o, k);
  throw typeError(`'${typeName(o)}' object is not subscriptable`);
}

function charAt(s: string, k: unknown): string {
  if (typeof k === "boolean") k = k ? 1 : 0;
  if (typeof k !== "number" || !Number.isInteger(k)) {
    if (typeof k === "bigint") {
      const huge = k > 9223372036854775807n || k < -9223372036854775808n;
      throw new ExprFault(huge ? "IndexError: cannot fit 'int' into an index-sized integer" : "IndexError: string index out of range");
    }
    throw typeError(`string indices must be integers, not '${typeName(k)}'`);
  }
  const chars = codePoints(s);
  const i = k < 0 ? chars.length + k : k;
  const ch = chars[i];
  if (i < 0 || ch === undefined) throw new ExprFault("IndexError: string index out of range");
  return ch;
}

function mapOf(args: readonly unknown[], scope: Scope, env: Env): Dict {
  if (args.length % 2) throw new IRLoadError("a map expression needs key, value pairs");
  const out: Dict = {};
  for (let i = 0; i < args.length; i += 2) {
    const key = evaluate(args[i], scope, env);
    const value = evaluate(args[i + 1], scope, env);
    if (typeof key !== "string") {
      if (Array.isArray(key) || isDict(key)) throw typeError(`unhashable type: '${typeName(key)}'`);
      // A map's keys are strings in every flow the compiler accepts: JSON has no others.
      throw new ExprFault(`a map key must be a string, got ${repr(key)}`);
    }
    setKey(out, key, value);
  }
  return out;
}

function call(name: string, args: readonly unknown[], scope: Scope, env: Env): unknown {
  const known = BUILTINS[name];
  if (known === undefined) throw new IRLoadError(`unknown function ${repr(name)}`);
  if (args.length < known.least || args.length > known.most) {
    throw new IRLoadError(
      `\`${name}\` takes ${String(known.least)} to ${String(known.most)} arguments, got ${String(args.length)}`,
    );
  }
  if (name === "coalesce") {
    const v = evaluate(args[0], scope, env);
    return v === null ? evaluate(args[1], scope, env) : v;
  }
  if (name === "active") return active(args[0], scope, env);
  if (name === "event_name") return env.eventName ?? "";
  const fn = FUNCTIONS[name];
  if (fn === undefined) throw new IRLoadError(`unknown function ${repr(name)}`);
  return fn(...args.map((a) => evaluate(a, scope, env)));
}

function active(arg: unknown, scope: Scope, env: Env): boolean {
  const n = asNode(arg);
  if (n.op !== "lit" || typeof n.value !== "string") {
    throw new IRLoadError("`active` takes a state name (a string literal)");
  }
  const target = n.value;
  if (env.active !== undefined) return env.active(target);
  return scope.s.name === target || (scope.s.ancestors ?? []).includes(target);
}

/** What a fault says a value is: "none", "a bool", "a map", "a int" (Python's words). */
export function kindOf(value: unknown): string {
  if (value === null) return "none";
  if (typeof value === "boolean") return "a bool";
  if (isDict(value)) return "a map";
  return `a ${typeName(value)}`;
}

/** Charges `items` loop iterations to the step (`StepOutputs.charge_loop`). */
export function chargeLoop(env: Env, items: number): void {
  env.budget.iterations += items;
  if (env.budget.iterations > env.limits.maxLoopIterations) {
    throw new LimitExceeded(
      `the step's loops would run more than ${grouped(env.limits.maxLoopIterations)} ` +
        "iterations in all (Limits.max_loop_iterations)",
    );
  }
}

function quantified(n: Node, kind: string, scope: Scope, env: Env): unknown {
  const [listed, body] = argsOf(n, kind, 2);
  const key = LOCAL_PREFIX + nameOf(n.value, kind);
  const items = evaluate(listed, scope, env);
  if (!Array.isArray(items)) throw new ExprFault(`\`${kind}\` needs a list, got ${kindOf(items)}`);
  const inner: Scope = { c: { ...scope.c }, e: scope.e, s: scope.s };
  const each = (x: unknown): unknown => {
    setKey(inner.c, key, x);
    return evaluate(body, inner, env);
  };
  chargeLoop(env, items.length);
  switch (kind) {
    case "any":
      return items.some((x) => truthy(each(x)));
    case "all":
      return items.every((x) => truthy(each(x)));
    case "count":
      return items.filter((x) => truthy(each(x))).length;
    case "sum": {
      let total: unknown = 0;
      for (const x of items) total = add(total, each(x));
      return env.limits.checkComputed(total);
    }
    default: {
      if (items.length === 0) throw new ExprFault(`\`${kind}\` of an empty list`);
      return extreme(items.map(each), kind as "min" | "max");
    }
  }
}

export { runActions } from "./actions.js";
