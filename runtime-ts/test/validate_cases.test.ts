// Every validation case of the Python runtime (tests/ts/make_validate_cases.py): the same
// normalised value, or the same field-level feedback.
import { describe, expect, it } from "vitest";
import { TypeSystem, type FieldDef, type TypeRef } from "../src/types.js";
import { checkPayload, feedback, Invalid, InvalidWithFeedback, report } from "../src/validate.js";
import { dumps, toPlain, type Dict } from "../src/values.js";
import { limitsOf, loadDocument } from "./cases.js";

interface ValueCase {
  type: TypeRef;
  value: unknown;
  normal?: string;
  feedback?: Dict;
}
interface PayloadCase {
  payload: unknown;
  limits?: Record<string, number>;
  normal?: string;
  feedback?: Dict;
}
interface Document {
  ir: {
    enums: { name: string; members: string[] }[];
    records: { name: string; fields: FieldDef[] }[];
    events: { name: string; fields: FieldDef[] }[];
  };
  values: ValueCase[];
  payloads: PayloadCase[];
}
const DOC = loadDocument("validate_cases.json") as Document;

function checkValue(c: ValueCase): { normal?: string; feedback?: unknown } {
  const types = TypeSystem.of(DOC.ir);
  const t = types.compile(c.type);
  try {
    return { normal: dumps(t.check(c.value)) };
  } catch (e) {
    if (!(e instanceof Invalid)) throw e;
    return { feedback: toPlain(feedback(report(t, c.value), "Fix it.")) };
  }
}

function checkEvent(c: PayloadCase): { normal?: string; feedback?: unknown } {
  const limits = limitsOf(c.limits);
  const types = TypeSystem.of(DOC.ir, limits);
  const fields = types.fields(DOC.ir.events[0]?.fields ?? [], "event put");
  try {
    return { normal: dumps(checkPayload(fields, c.payload, { event: "put", limits })) };
  } catch (e) {
    if (!(e instanceof InvalidWithFeedback)) throw e;
    return { feedback: toPlain(e.feedback) };
  }
}

function expected(c: ValueCase | PayloadCase): { normal?: string; feedback?: unknown } {
  return c.normal !== undefined ? { normal: c.normal } : { feedback: toPlain(c.feedback) };
}

describe("values are checked and normalised as in the Python runtime", () => {
  it.each(DOC.values.map((c, i) => [i, dumps(c.type), c] as const))("case %i: %s", (_i, _t, c) => {
    expect(checkValue(c), dumps(c.value).slice(0, 100)).toEqual(expected(c));
  });
});

describe("payloads are checked with the Python runtime's field-level feedback", () => {
  it.each(DOC.payloads.map((c, i) => [i, c] as const))("case %i", (_i, c) => {
    expect(checkEvent(c), dumps(c.payload).slice(0, 100)).toEqual(expected(c));
  });
});
