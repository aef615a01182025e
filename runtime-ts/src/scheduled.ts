// Scheduled events (IR version 4; runtime/expr.py `_schedule`, runtime/engine.py `sends_after`,
// runtime/instance.py `_restore_sends`): `send E(...) after D [as ID]` and `cancel ID` run as
// actions that only record what they ask for; the engine applies them, in order, when the step
// commits (a refused step schedules and cancels nothing), and `advance` delivers each one due.
import type { Env, Scheduling } from "./expr.js";
import { evaluate, type Scope } from "./expr.js";
import { ExprFault, IRLoadError } from "./faults.js";
import { LimitExceeded } from "./limits.js";
import { MAX_DELAY_MS } from "./timers.js";
import { grouped, isDict, isInt, repr, strLen, typeName, type Dict } from "./values.js";

export type { Scheduling };

/** A pending scheduled event: delivered at `due` (epoch ms). */
export interface Scheduled {
  readonly due: number;
  readonly id: string;
  readonly event: string;
  readonly payload: Record<string, unknown> | null;
}

/** A scheduled event's delay: an int of milliseconds; below 1 ms counts as 1 ms. */
function delayOf(ms: unknown, event: string): number {
  if (!isInt(ms)) {
    const kind = ms === null ? "none" : typeName(ms);
    throw new ExprFault(`the delay of the scheduled event ${event} is not an int (${kind})`);
  }
  const n = Number(ms);
  if (n > MAX_DELAY_MS) {
    throw new ExprFault(`the delay of the scheduled event ${event} is ${grouped(ms)} ms, longer than any timer may wait`);
  }
  return Math.max(n, 1);
}

/** A scheduled event's id: a str no longer than a host's idempotency key may be. */
function idOf(ident: unknown, env: Env): string {
  if (typeof ident !== "string") throw new ExprFault(`the id of a scheduled event is not a str (${typeName(ident)})`);
  const n = strLen(ident);
  if (n > env.limits.maxArgument) {
    throw new ExprFault(`the id of a scheduled event has ${grouped(n)} characters; at most ${grouped(env.limits.maxArgument)}`);
  }
  return ident;
}

/** The action `send` or `cancel`: evaluated now (id, then delay, then payload), kept for the
 * commit; it counts as one of the step's outputs. */
export function scheduleAction(raw: Readonly<Record<string, unknown>>, scope: Scope, env: Env): void {
  const sending = raw.op === "send";
  const name = raw.event;
  if (sending && typeof name !== "string") throw new IRLoadError(`\`send\` needs an event name, got ${repr(name ?? null)}`);
  const keyNode = raw.key ?? null;
  if (!sending && keyNode === null) throw new IRLoadError("`cancel` needs the id of a scheduled event");
  const scheduled = env.scheduled;
  if (scheduled === undefined) throw new IRLoadError("`send` or `cancel` outside a step of the engine");
  const to = raw.to ?? null;
  if (sending && to !== null) {
    // `send E(...) to parent|ID`: a message (IR version 5), no id and no delay
    const node = raw.value ?? null;
    const entry: Scheduling = { id: null, event: name as string, payload: node === null ? null : (evaluate(node, scope, env) as Dict), delayMs: 0, to: typeof to === "string" ? to : JSON.stringify(to) };
    charge(env, entry.payload);
    scheduled.push(entry);
    return;
  }
  const ident = keyNode === null ? null : idOf(evaluate(keyNode, scope, env), env);
  let entry: Scheduling = { id: ident, event: null, payload: null, delayMs: 0 };
  if (sending) {
    const event = name as string;
    const delayMs = delayOf(evaluate(raw.delay ?? null, scope, env), event);
    const node = raw.value ?? null;
    const payload = node === null ? null : (evaluate(node, scope, env) as Dict);
    entry = { id: ident, event, payload, delayMs };
  }
  charge(env, entry.payload);
  scheduled.push(entry);
}

function charge(env: Env, payload: Dict | null): void {
  const { limits, budget } = env;
  if (budget.outputs >= limits.maxOutputs) {
    throw new LimitExceeded(
      `the step emits and raises more than ${grouped(limits.maxOutputs)} effects and events (Limits.max_outputs)`,
    );
  }
  if (payload !== null && isDict(payload) && Object.keys(payload).length > 0) {
    budget.size += limits.outputSize(payload, limits.maxOutputSize - budget.size);
  }
  budget.outputs += 1;
}

/** Where a scheduled payload that does not fit refused the step, and why. */
export class SendRefused extends Error {
  override name = "SendRefused";
  constructor(
    readonly fault: ExprFault,
    readonly where: string,
  ) {
    super(fault.message);
  }
}

/** The scheduled events after a step: its `send`s and `cancel`s applied in order to those
 * pending (a `send` with a pending id replaces it; one without an id gets `#SEQ.N`, its place
 * in step SEQ; a `cancel` of an unknown id does nothing), none once the instance has ended.
 * `check` normalises a payload (throws an ExprFault when it does not fit: `SendRefused`). */
export function sendsAfter(
  pending: readonly Scheduled[],
  scheduled: readonly Scheduling[],
  final: boolean,
  now: number,
  seq: number,
  check: (event: string, given: Dict | null) => Record<string, unknown> | null,
): Scheduled[] {
  if (final) return [];
  const byId = new Map<string, Scheduled>(pending.map((x) => [x.id, x]));
  scheduled.forEach((op, n) => {
    const ident = op.id ?? `#${String(seq)}.${String(n)}`;
    byId.delete(ident);
    if (op.event === null) return;
    let payload: Record<string, unknown> | null;
    try {
      payload = check(op.event, op.payload);
    } catch (exc) {
      if (!(exc instanceof ExprFault)) throw exc;
      const fault = new ExprFault(`the payload of the scheduled event ${op.event} does not fit its fields`);
      throw new SendRefused(fault, `a \`send ${op.event}\``);
    }
    byId.set(ident, { due: now + op.delayMs, id: ident, event: op.event, payload });
  });
  return [...byId.values()].sort((a, b) => a.due - b.due);
}

/** A step's scheduled events and `cancel`s, and its messages (`send E to ...`). */
export function splitMessages(ops: readonly Scheduling[]): [Scheduling[], Scheduling[]] {
  return [ops.filter((op) => op.to === undefined), ops.filter((op) => op.to !== undefined)];
}
