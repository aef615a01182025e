// Snapshots: this runtime writes what the Python runtime writes at the same point of the same
// run (each vector's recorded snapshot), and reads it back.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Machine } from "../src/machine.js";
import { SnapshotError } from "../src/snapshot.js";
import { asJson, snapshotAfter, type VectorFile } from "../src/vectors.js";

const folder = join(dirname(fileURLToPath(import.meta.url)), "vectors");
const files = readdirSync(folder).filter((f) => f.endsWith(".vectors.json")).sort();

describe.each(files)("%s", (file) => {
  const data = JSON.parse(readFileSync(join(folder, file), "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  const withSnapshot = data.vectors.filter((v) => v.snapshot !== undefined);
  it.each(withSnapshot.map((v) => [v.name, v] as const))("same snapshot as Python: %s", (_name, v) => {
    const want = v.snapshot;
    if (want === undefined) return;
    expect(snapshotAfter(machine, v, want.after)).toEqual(want.data);
  });
});

describe("restore refuses", () => {
  const file = join(folder, "lamp.vectors.json");
  const data = JSON.parse(readFileSync(file, "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  const snap = data.vectors.find((v) => v.snapshot)?.snapshot?.data ?? {};

  it("another flow", () => {
    expect(() => machine.restore({ ...snap, flow: "other" })).toThrow(SnapshotError);
  });
  it("an unknown field", () => {
    expect(() => machine.restore({ ...snap, extra: 1 })).toThrow(/unknown field 'extra'/);
  });
  it("an unknown state", () => {
    expect(() => machine.restore({ ...snap, state: "Nowhere" })).toThrow(/does not exist/);
  });
  it("a newer version", () => {
    expect(() => machine.restore({ ...snap, version: 99 })).toThrow(/version 99/);
  });
  it("round trips its own snapshot", () => {
    const inst = machine.restore(snap);
    expect(asJson(machine.restore(asJson(inst.snapshot()) as object).snapshot())).toEqual(asJson(inst.snapshot()));
  });
});

describe("restore refuses a history", () => {
  const data = JSON.parse(readFileSync(join(folder, "lamp.vectors.json"), "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  const snap = data.vectors.find((v) => v.snapshot)?.snapshot?.data ?? {};
  const history = snap.history as Record<string, unknown>[];

  it("naming a state this very flow does not have", () => {
    const edited = { ...snap, history: [...history.slice(0, -1), { ...history[history.length - 1], source: "Gone" }] };
    expect(() => machine.restore(edited)).toThrow(/names state 'Gone'/);
  });
  it("but keeps an older version's states as retired", () => {
    const edited = { ...snap, hash: "sha256:older", history: [...history.slice(0, -1), { ...history[history.length - 1], source: "Gone" }] };
    expect(machine.restore(edited).snapshot().retired_states).toEqual(["Gone"]);
  });
  it("out of order, or not ending at its seq", () => {
    expect(() => machine.restore({ ...snap, history: [...history].reverse() })).toThrow(/out of order/);
    expect(() => machine.restore({ ...snap, seq: 7 })).toThrow(/seq is 7/);
  });
  it("with a key naming a step it lacks", () => {
    expect(() => machine.restore({ ...snap, keys: { k: 9 } })).toThrow(/names step 9/);
  });
});

describe("restore reads a context", () => {
  const data = JSON.parse(readFileSync(join(folder, "lamp.vectors.json"), "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  const snap = data.vectors.find((v) => v.snapshot)?.snapshot?.data ?? {};
  const context = snap.context as Record<string, unknown>;

  it("refusing a field the flow does not have, unless told to drop it", () => {
    const edited = { ...snap, context: { ...context, gone: 1 } };
    expect(() => machine.restore(edited)).toThrow(/context does not fit the flow/);
    expect(machine.restore(edited, { dropUnknown: true }).context).toEqual(context);
  });
  it("filling a field the snapshot lacks from its default", () => {
    expect(machine.restore({ ...snap, context: {} }).context).toEqual({ presses: 0 });
  });
  it("refusing a value of the wrong type", () => {
    expect(() => machine.restore({ ...snap, context: { presses: "many" } })).toThrow(SnapshotError);
  });
});
