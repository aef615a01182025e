// Every action case run by the Python runtime (tests/ts/make_action_cases.py) leaves the same
// context, effects, raised and scheduled events here, or the same fault or limit.
import { describe, expect, it } from "vitest";
import { describeFault, ExprFault, LimitExceeded, newEnv, runActions } from "../src/expr.js";
import { targetTypeOf, TypeSystem, type FieldDef } from "../src/types.js";
import { checkPayload, initialContext } from "../src/validate.js";
import { dumps } from "../src/values.js";
import { limitsOf, loadDocument } from "./cases.js";

interface ActionCase {
  source: string;
  actions: unknown[];
  payload: Record<string, unknown>;
  limits?: Record<string, number>;
  context?: string;
  effects?: string;
  raised?: string;
  scheduled?: string;
  fault?: string;
  limit?: string;
}
interface Document {
  ir: {
    enums: { name: string; members: string[] }[];
    records: { name: string; fields: FieldDef[] }[];
    context: FieldDef[];
    events: { name: string; fields: FieldDef[] }[];
    effects: { name: string }[];
  };
  cases: ActionCase[];
}

const DOC = loadDocument("action_cases.json") as Document;
const STATE = { name: "A", title: "A", meta: {} };

function run(c: ActionCase): Record<string, string | undefined> {
  const doc = DOC;
  const limits = limitsOf(c.limits);
  const types = TypeSystem.of(doc.ir, limits);
  const fields = types.fields(doc.ir.context, "context");
  const event = doc.ir.events.find((e) => e.name === "go");
  const payload = checkPayload(types.fields(event?.fields ?? [], "event go"), c.payload, { event: "go", limits });
  const scope = { c: initialContext(fields, {}), e: payload, s: STATE };
  const env = newEnv({ limits, targetType: targetTypeOf(fields), declaredEffects: new Set(doc.ir.effects.map((e) => e.name)), scheduled: [] });
  try {
    runActions(c.actions, scope, env);
  } catch (e) {
    if (e instanceof LimitExceeded) return { limit: e.detail };
    if (e instanceof ExprFault) return { fault: describeFault(e) };
    throw e;
  }
  const done: Record<string, string> = { context: dumps(scope.c), effects: dumps(env.effects), raised: dumps(env.raised) };
  const scheduled = env.scheduled ?? [];
  if (scheduled.length > 0) done.scheduled = dumps(scheduled.map((x) => x.to === undefined ? [x.id, x.event, x.payload, x.delayMs] : [x.id, x.event, x.payload, x.delayMs, x.to]));
  return done;
}

describe("actions run as in the Python runtime", () => {
  const cases = DOC.cases;
  it.each(cases.map((c, i) => [i, c.source, c] as const))("case %i: %s", (_i, _source, c) => {
    const done = { context: c.context, effects: c.effects, raised: c.raised, ...(c.scheduled === undefined ? {} : { scheduled: c.scheduled }) };
    const expected = c.context !== undefined ? done : c.fault !== undefined ? { fault: c.fault } : { limit: c.limit };
    expect(run(c), dumps(c.payload)).toEqual(expected);
  });
});
