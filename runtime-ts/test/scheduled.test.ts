// Internal and scheduled events (IR version 4) beyond what the shared vectors hold: what a host
// is offered (accepted events, tools, flowc-run), snapshots /3 and their refusals, the loader,
// and an invariant that puts the pending scheduled events back. The flow is
// tests/testing/flows/reminders.flow, compiled into its vectors file.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EXIT_FAILURE, main } from "../src/cli.js";
import { FakeClock } from "../src/clock.js";
import { IRLoadError } from "../src/faults.js";
import { Instance } from "../src/instance.js";
import { Machine } from "../src/machine.js";
import { Rejection } from "../src/outcome.js";
import { SnapshotError } from "../src/snapshot.js";
import { FlowTools, toolEvents } from "../src/tools.js";
import { loadFlow } from "../src/ir.js";

const here = dirname(fileURLToPath(import.meta.url));
const IR = (JSON.parse(readFileSync(join(here, "vectors", "reminders.vectors.json"), "utf-8")) as { ir: Record<string, unknown> }).ir;
const MINUTE = 60_000;

function started(ir: Record<string, unknown> = IR, checkInvariants = false): [Instance, FakeClock] {
  const clock = new FakeClock(1_735_689_600_000);
  const inst = Machine.fromJSON(ir, { checkInvariants }).start({ clock: clock.now });
  if (!(inst instanceof Instance)) throw new Error(JSON.stringify(inst.toJSON()));
  return [inst, clock];
}

describe("internal events", () => {
  it("are refused to a host with Python's code, message and data, and nothing changes", () => {
    const [inst] = started();
    inst.send("submit", { ticket: "T" });
    const before = inst.snapshot();
    const refused = inst.send("remind", { round: 1 });
    expect(refused).toBeInstanceOf(Rejection);
    expect(refused.toJSON()).toEqual({
      ok: false, error: "internal_event", kind: "internal_event", state: "WAITING", event: "remind",
      message: "Event 'remind' is internal: only the flow itself may send it.",
    });
    expect(inst.snapshot()).toEqual(before);
  });

  it("are refused as internal before an ended instance is", () => {
    const [inst] = started();
    inst.send("close");
    expect(inst.isFinal).toBe(true);
    expect(inst.send("check").toJSON()).toMatchObject({ error: "internal_event" });
  });

  it("are not accepted events nor tools", () => {
    const [inst] = started();
    expect(inst.acceptedEvents().map((e) => e.name)).toEqual(["submit", "snooze", "answer", "hold", "pause", "later", "nudge", "close"]);
    expect(toolEvents(loadFlow(IR))).toEqual(["submit", "snooze", "answer", "close", "hold", "pause", "later", "nudge"]);
    const names = new FlowTools([Machine.fromJSON(IR)]).names();
    expect(names.some((n) => n.includes("remind") || n.includes("check"))).toBe(false);
    expect(names.some((n) => n.includes("submit"))).toBe(true);
  });

  it("are refused by flowc-run", () => {
    const dir = mkdtempSync(join(tmpdir(), "flowc-run-"));
    writeFileSync(join(dir, "reminders.json"), JSON.stringify(IR));
    writeFileSync(join(dir, "ops.jsonl"), '{"event": "remind", "payload": {"round": 1}}\n');
    const out: unknown[] = [];
    const code = main([join(dir, "reminders.json"), "--events", join(dir, "ops.jsonl"), "--now", "2025-01-01T00:00:00Z"],
      { out: (l) => out.push(JSON.parse(l)), err: () => undefined }, () => Buffer.from(""));
    expect(code).toBe(EXIT_FAILURE);
    expect(out[1]).toMatchObject({ ok: false, error: "internal_event", event: "remind" });
  });
});

describe("scheduled events", () => {
  it("are kept in a snapshot /3 that restores to the same pending events", () => {
    const [inst, clock] = started();
    inst.send("submit", { ticket: "T" });
    inst.send("snooze");
    const snap = inst.snapshot();
    expect(snap.format).toBe("flowc.snapshot/3");
    expect(snap.sends).toEqual([
      { id: "#2.1", due: "2025-01-01T00:01:00+00:00", event: "check", payload: { note: "auto" } },
      { id: "reminder", due: "2025-01-01T02:00:00+00:00", event: "remind", payload: { round: 9 } },
    ]);
    const back = Machine.fromJSON(IR).restore(JSON.stringify(snap), { clock: clock.now });
    expect(back.scheduled).toEqual(inst.scheduled);
    expect(back.snapshot()).toEqual(snap);
  });

  it("leave no trace in a snapshot once none is pending", () => {
    const [inst] = started();
    inst.send("submit", { ticket: "T" });
    inst.send("answer");
    const snap = inst.snapshot();
    expect(snap.format).toBe("flowc.snapshot/1");
    expect("sends" in snap).toBe(false);
  });

  it("of an event the flow lacks, or with a malformed payload, refuse the snapshot", () => {
    const [inst] = started();
    inst.send("submit", { ticket: "T" });
    const snap = inst.snapshot();
    const sends = snap.sends as Record<string, unknown>[];
    const m = Machine.fromJSON(IR);
    const bad = (change: Record<string, unknown>): unknown => m.restore({ ...snap, sends: [{ ...sends[0], ...change }] });
    expect(() => bad({ event: "nope" })).toThrow(SnapshotError);
    expect(() => bad({ event: "nope" })).toThrow("scheduled event 0 of the snapshot (\"nope\", id \"reminder\") is not an event of reminders version 1");
    expect(() => bad({ payload: [1] })).toThrow("scheduled event 0 of the snapshot has a malformed payload");
    expect(() => bad({ due: "soon" })).toThrow("malformed snapshot scheduled events");
    expect(() => m.restore({ ...snap, format: "flowc.snapshot/5" })).toThrow("unknown snapshot format");
  });

  it("are put back with everything else when an invariant refuses the step", () => {
    const invariant = { name: "few_checks", expr: { op: "<", args: [{ op: "ctx", value: "checks" }, { op: "lit", value: 1 }] } };
    const [inst, clock] = started({ ...IR, invariants: [invariant] }, true);
    inst.send("snooze");
    const before = inst.snapshot();
    clock.advance(MINUTE);
    const outcomes = inst.advance();
    expect(outcomes.map((o) => o.toJSON())).toMatchObject([{ ok: false, error: "invariant_violated" }]);
    expect(inst.snapshot()).toEqual(before);
    expect(inst.scheduled.map((x) => x.id)).toEqual(["#1.1", "reminder"]);
  });
});

describe("the loader", () => {
  it("reads version 4 and refuses a malformed internal mark or a later version", () => {
    expect(loadFlow(IR).events.filter((e) => e.internal).map((e) => e.name)).toEqual(["remind", "check"]);
    const events = (IR.events as Record<string, unknown>[]).map((e) => (e.name === "remind" ? { ...e, internal: "yes" } : e));
    expect(() => loadFlow({ ...IR, events })).toThrow(IRLoadError);
    expect(() => loadFlow({ ...IR, ir_version: 6 })).toThrow(/ir_version 6/);
  });
});
