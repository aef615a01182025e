// Loading: the IR is checked once, and what the Python runtime's loader refuses is refused
// here too (`IRLoadError`), before any instance runs.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { IRLoadError } from "../src/ir.js";
import { Machine } from "../src/machine.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
type Json = Record<string, unknown>;
type Flow = Json & { states: Json[]; transitions: Json[] };

function fixture(name: string): Flow {
  return JSON.parse(readFileSync(join(fixtures, `${name}.json`), "utf-8")) as Flow;
}

function refused(ir: unknown, words: RegExp): void {
  expect(() => Machine.fromJSON(ir as object)).toThrow(IRLoadError);
  expect(() => Machine.fromJSON(ir as object)).toThrow(words);
}

describe("loading refuses", () => {
  it("text that is not JSON, and JSON that is not an object", () => {
    refused("{", /not JSON/);
    refused("[1]", /must be a JSON object/);
  });
  it("an IR version it does not read", () => {
    refused({ ...fixture("boundary"), ir_version: 9 }, /ir_version 9/);
  });
  it("unknown members, at every level", () => {
    refused({ ...fixture("boundary"), colour: 1 }, /the document has unknown field\(s\) 'colour'/);
    const ir = fixture("boundary");
    ir.states[0] = { ...ir.states[0], colour: 1 };
    refused(ir, /states\[0\] has unknown field\(s\) 'colour'/);
  });
  it("a missing required member", () => {
    const ir = fixture("boundary");
    delete ir.initial;
    refused(ir, /lacks required field\(s\) 'initial'/);
  });
  it("a rule to or from a state that does not exist", () => {
    const ir = fixture("boundary");
    ir.transitions[0] = { ...ir.transitions[0], target: "Nowhere" };
    refused(ir, /goes to unknown state 'Nowhere'/);
  });
  it("a timer without a delay", () => {
    const ir = fixture("boundary");
    ir.transitions[0] = { ...ir.transitions[0], after_ms: 0 };
    refused(ir, /needs after_ms > 0/);
  });
  it("a compound state without exactly one initial child", () => {
    const ir = fixture("compound_to_child");
    ir.states = ir.states.map((s) => (s.name === "c1" ? { ...s, initial: false } : s));
    refused(ir, /needs exactly one initial child \(none\)/);
  });
  it("a child listed before its parent", () => {
    const ir = fixture("compound_to_child");
    const [p, c1, ...rest] = ir.states;
    ir.states = [c1 as Json, p as Json, ...rest];
    refused(ir, /listed before its parent/);
  });
});

describe("loading reads", () => {
  it("a flat flow as a chart of top-level leaves", () => {
    const m = Machine.fromJSON(fixture("boundary"));
    expect(m.chart).toBe(false);
    expect(m.hierarchical).toBe(false);
    expect([...m.states.values()].every((s) => s.atomic && s.parent === null)).toBe(true);
  });
  it("a statechart's tree: parents, ancestors, regions, done events", () => {
    const m = Machine.fromJSON(fixture("regions"));
    expect(m.chart).toBe(true);
    const l2 = m.states.get("L2");
    expect(l2?.ancestors.map((s) => s.name)).toEqual(["Left", "Both"]);
    expect(m.states.get("Both")?.regions.map((s) => s.name)).toEqual(["Left", "Right"]);
    expect([...m.internalEvents].sort()).toEqual(["done.state.Both", "done.state.Left", "done.state.Right"]);
  });
});

describe("loading refuses expressions", () => {
  it("that are not expression objects", () => {
    const ir = fixture("compound_to_child");
    ir.transitions[0] = { ...ir.transitions[0], guard: 5 };
    refused(ir, /guard must be an expression object/);
  });
  it("a literal guard that is not a bool", () => {
    const ir = fixture("compound_to_child");
    ir.transitions[0] = { ...ir.transitions[0], guard: { op: "lit", value: 5 } };
    refused(ir, /not a bool/);
  });
});

describe("loading refuses lowered templates", () => {
  it("that are not an object of part arrays or nulls", () => {
    refused({ ...fixture("boundary"), lowered_templates: { "{{ x }}": "text" } }, /lowered_templates must be an object of arrays or nulls/);
    refused({ ...fixture("boundary"), lowered_templates: [] }, /lowered_templates/);
    expect(Machine.fromJSON({ ...fixture("boundary"), lowered_templates: { "{{ x }}": null } }).name).toBe("boundary");
  });
});
