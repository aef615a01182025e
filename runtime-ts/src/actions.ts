/**
 * Actions (runtime/expr.py `ExprCompiler.actions`): `set`, `add`, `sub`, `append`, `remove`,
 * `put`, `delete`, `if`, `for`, `each`, `emit`, `raise`, `send`, `cancel` (scheduled.ts), run on the working copy of the
 * context `scope.c` with the Python runtime's semantics. Containers along a target path are
 * copied before they are changed (copy-on-write), so committed contexts, defaults and payloads
 * may be shared freely.
 */
import { ExprFault, IRLoadError, typeError } from "./faults.js";
import { LimitExceeded } from "./limits.js";
import { add, eq, sub } from "./operators.js";
import { chargeLoop, evaluate, kindOf, LOCAL_PREFIX, type Env, type Scope } from "./expr.js";
import { scheduleAction } from "./scheduled.js";
import { Invalid, type Type } from "./types.js";
import { dumps, grouped, hasKey, isDict, repr, setKey, truthy, type Dict } from "./values.js";

type Action = Readonly<Record<string, unknown>>;
type Change = (old: unknown, v: unknown) => unknown;
type Norm = (v: unknown) => unknown;

const identity: Norm = (v) => v;

/** Runs a block of actions in order on `scope.c`. */
export function runActions(block: readonly unknown[], scope: Scope, env: Env): void {
  for (const raw of block) {
    if (!isDict(raw)) throw new IRLoadError(`an action must be an object, got ${repr(raw)}`);
    runAction(raw, scope, env);
  }
}

function pathOf(raw: Action): string[] {
  const target = raw.target;
  if (!Array.isArray(target) || target.length === 0 || !target.every((p) => typeof p === "string")) {
    throw new IRLoadError(`an action needs a target path, got ${repr(target ?? null)}`);
  }
  return target;
}

function isLeaf(node: unknown): boolean {
  if (!isDict(node)) return false;
  return node.op === "lit" || ((node.op === "ctx" || node.op === "event") && typeof node.value === "string");
}

function runAction(raw: Action, scope: Scope, env: Env): void {
  const op = raw.op;
  switch (op) {
    case "set":
    case "add":
    case "sub":
      store(op, raw, scope, env);
      return;
    case "append":
    case "remove":
      listChange(op, raw, scope, env);
      return;
    case "put":
    case "delete":
      keyed(op, raw, scope, env);
      return;
    case "if":
      branch(raw, scope, env);
      return;
    case "for":
    case "each":
      loop(op === "each", raw, scope, env);
      return;
    case "emit":
    case "raise":
      output(op, raw, scope, env);
      return;
    case "send":
    case "cancel":
      scheduleAction(raw, scope, env);
      return;
    default:
      throw new IRLoadError(`unknown action op ${repr(op ?? null)}`);
  }
}

function typeAt(env: Env, path: readonly string[]): Type | null {
  return env.targetType ? env.targetType(path) : null;
}

/** The limits check of a stored value: only computed values (and sums) can be past them. */
function bound(env: Env, op: string, valueNode: unknown, ty: Type | null): Norm | null {
  if (!(op === "add" || op === "sub" || !isLeaf(valueNode))) return null;
  const kind = ty === null ? "json" : ty.kind === "optional" && ty.item ? ty.item.kind : ty.kind;
  if (kind === "float" || kind === "bool" || kind === "enum") return null;
  if (kind === "int") return (v) => env.limits.checkInt(v);
  if (kind === "str") return (v) => env.limits.checkStr(v);
  return (v) => env.limits.checkComputed(v);
}

function shortJSON(value: unknown): string {
  const text = dumps(value);
  return text.length <= 60 ? text : text.slice(0, 57) + "...";
}

/** The type's normalisation of a stored value (defaults, floats, ranges), a fault if it does
 * not fit. */
function normaliser(ty: Type | null, path: readonly string[], item: boolean): Norm {
  if (ty === null || ty.normal) return identity;
  return (v) => {
    try {
      return ty.check(v);
    } catch (e) {
      if (!(e instanceof Invalid)) throw e;
      const where = item ? `an item of \`${path.join(".")}\`` : `\`${path.join(".")}\``;
      throw new ExprFault(`${where} takes ${ty.requirement()}; the actions computed ${shortJSON(v)}`);
    }
  };
}

function then(first: Norm | null, norm: Norm): Norm {
  return first === null ? norm : (v) => norm(first(v));
}

function noneOnPath(path: readonly string[], upto: number): ExprFault {
  return new ExprFault(`cannot set \`${path.join(".")}\`: \`${path.slice(0, upto).join(".")}\` is none`);
}

function read(holder: Dict, key: string): unknown {
  if (!hasKey(holder, key)) throw new ExprFault(`KeyError: ${repr(key)}`);
  return holder[key];
}

/** Sets `path` to `change(old, v)`, copying each container on the way (copy-on-write). */
function update(scope: Scope, path: readonly string[], v: unknown, change: Change, readOld = true): void {
  let node: Dict = scope.c;
  for (let i = 0; i < path.length - 1; i++) {
    const name = path[i] as string;
    const child = read(node, name);
    if (child === null) throw noneOnPath(path, i + 1);
    if (!isDict(child)) throw typeError(`'${kindOf(child).slice(2)}' object does not support item assignment`);
    const copy = { ...child };
    setKey(node, name, copy);
    node = copy;
  }
  const last = path[path.length - 1] as string;
  const old = readOld ? read(node, last) : null;
  setKey(node, last, change(old, v));
}

function store(op: string, raw: Action, scope: Scope, env: Env): void {
  const path = pathOf(raw);
  const ty = typeAt(env, path);
  const valueNode = raw.value;
  const leafSet = op === "set" && isLeaf(valueNode);
  const norm = then(leafSet ? null : bound(env, op, valueNode, ty), normaliser(ty, path, false));
  const v = evaluate(valueNode, scope, env);
  if (op === "set") update(scope, path, v, (_old, x) => norm(x), false);
  else if (op === "add") update(scope, path, v, (old, x) => norm(add(old, x)));
  else update(scope, path, v, (old, x) => norm(sub(old, x)));
}

function asList(old: unknown): unknown[] {
  if (Array.isArray(old)) return old;
  throw typeError(`object of type '${kindOf(old) === "none" ? "NoneType" : kindOf(old).slice(2)}' has no len()`);
}

function listChange(op: string, raw: Action, scope: Scope, env: Env): void {
  const path = pathOf(raw);
  const ty = typeAt(env, path);
  if (ty !== null && (ty.kind !== "list" || ty.item === null)) {
    throw new IRLoadError(`\`${op}\` needs a list field, \`${path.join(".")}\` is not one`);
  }
  const v = evaluate(raw.value, scope, env);
  if (op === "remove") {
    update(scope, path, v, (old, x) => {
      const out = [...asList(old)];
      const at = out.findIndex((y) => y === x || eq(y, x));
      if (at >= 0) out.splice(at, 1); // removing an item that is not there is not a fault
      return out;
    });
    return;
  }
  const item = ty?.item ?? null;
  const norm = then(bound(env, op, raw.value, item), normaliser(item, path, true));
  const longest = env.limits.maxItems;
  update(scope, path, v, (old, x) => {
    const list = asList(old);
    if (list.length >= longest) throw new LimitExceeded(`the list would have more than ${grouped(longest)} items`);
    return [...list, norm(x)];
  });
}

function keyed(op: string, raw: Action, scope: Scope, env: Env): void {
  const path = pathOf(raw);
  const ty = typeAt(env, path);
  const kinds = op === "put" ? ["list", "map"] : ["map"];
  if (ty !== null && (!kinds.includes(ty.kind) || ty.item === null)) {
    throw new IRLoadError(`\`${op}\` needs a ${kinds.join(" or ")} field, \`${path.join(".")}\` is not`);
  }
  const key = evaluate(raw.key, scope, env);
  if (op === "delete") {
    update(scope, path, key, (old, k) => deleted(old, k));
    return;
  }
  const item = ty?.item ?? null;
  const norm = then(bound(env, "put", raw.value, item), normaliser(item, path, true));
  const v = evaluate(raw.value, scope, env);
  const longest = env.limits.maxItems;
  update(scope, path, [key, v], (old, pair) => {
    const [k, x] = pair as [unknown, unknown];
    if (Array.isArray(old)) {
      if (typeof k !== "number" || !Number.isInteger(k) || k < 0 || k >= old.length) {
        throw new ExprFault(`index ${repr(k)} is out of range for a list of ${String(old.length)} items`);
      }
      const out: unknown[] = (old as unknown[]).slice();
      out[k] = norm(x);
      return out;
    }
    if (!isDict(old)) throw typeError(`'${kindOf(old) === "none" ? "NoneType" : kindOf(old).slice(2)}' object is not iterable`);
    if (typeof k !== "string") throw new ExprFault(`a map key must be a string, got ${repr(k)}`);
    if (!hasKey(old, k) && Object.keys(old).length >= longest) {
      throw new LimitExceeded(`the map would have more than ${grouped(longest)} entries`);
    }
    const out = { ...old };
    setKey(out, k, norm(x));
    return out;
  });
}

function deleted(old: unknown, key: unknown): unknown {
  if (!isDict(old)) throw typeError(`argument of type '${old === null ? "NoneType" : kindOf(old).slice(2)}' is not iterable`);
  if (typeof key !== "string" || !hasKey(old, key)) return old; // deleting a missing key is not a fault
  const out = { ...old };
  Reflect.deleteProperty(out, key);
  return out;
}

function branch(raw: Action, scope: Scope, env: Env): void {
  const branches = raw.branches;
  if (!Array.isArray(branches) || branches.length === 0) throw new IRLoadError("an `if` action needs at least one branch");
  for (const b of branches) {
    if (!isDict(b)) throw new IRLoadError(`a branch of an \`if\` must be an object, got ${repr(b)}`);
    const guard = b.guard ?? null;
    if (guard === null || truthy(evaluate(guard, scope, env))) {
      runActions((b.actions as unknown[] | undefined) ?? [], scope, env);
      return;
    }
  }
}

function loop(local: boolean, raw: Action, scope: Scope, env: Env): void {
  const target = raw.target;
  if (!Array.isArray(target) || target.length !== 1 || typeof target[0] !== "string") {
    throw new IRLoadError("a `for` action needs the name of its item field");
  }
  let item = target[0];
  let index = raw.index ?? null;
  if (index !== null && typeof index !== "string") throw new IRLoadError(`a \`for\` index must be a field name, got ${repr(index)}`);
  const branches = raw.branches;
  if (!Array.isArray(branches) || branches.length !== 1 || !isDict(branches[0])) throw new IRLoadError("a `for` action needs one body");
  const body = ((branches[0]).actions as unknown[] | undefined) ?? [];
  let norm: Norm = identity;
  if (local) {
    item = LOCAL_PREFIX + item;
    index = index === null ? null : LOCAL_PREFIX + index;
  } else {
    norm = normaliser(typeAt(env, [item]), [item], false);
    if (index !== null) typeAt(env, [index]);
  }
  const items = evaluate(raw.value, scope, env);
  if (!Array.isArray(items)) throw new ExprFault(`\`for\` needs a list, got ${kindOf(items)}`);
  chargeLoop(env, items.length);
  try {
    (items as unknown[]).slice().forEach((x, i) => {
      setKey(scope.c, item, norm(x));
      if (index !== null) setKey(scope.c, index as string, i);
      runActions(body, scope, env);
    });
  } finally {
    if (local) {
      Reflect.deleteProperty(scope.c, item);
      if (index !== null) Reflect.deleteProperty(scope.c, index as string);
    }
  }
}

function output(op: string, raw: Action, scope: Scope, env: Env): void {
  const name = raw.event;
  if (typeof name !== "string") {
    throw new IRLoadError(op === "emit" ? `an \`emit\` action needs an effect name, got ${repr(name ?? null)}` : `\`raise\` needs an event name, got ${repr(name ?? null)}`);
  }
  if (op === "emit" && env.declaredEffects && !env.declaredEffects.has(name)) {
    throw new IRLoadError(`an \`emit\` action names undeclared effect ${repr(name)}`);
  }
  const node = raw.value ?? null;
  let payload = node === null ? null : (evaluate(node, scope, env) as Dict);
  if (op === "emit" && payload === null) payload = {};
  const limits = env.limits;
  const budget = env.budget;
  if (budget.outputs >= limits.maxOutputs) {
    throw new LimitExceeded(
      `the step emits and raises more than ${grouped(limits.maxOutputs)} effects and events (Limits.max_outputs)`,
    );
  }
  if (payload !== null && Object.keys(payload).length > 0) {
    budget.size += limits.outputSize(payload, limits.maxOutputSize - budget.size);
  }
  budget.outputs += 1;
  (op === "emit" ? env.effects : env.raised).push([name, payload]);
}
