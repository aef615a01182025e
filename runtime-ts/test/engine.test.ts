// The step semantics of issue 24 item 6 on this runtime's one engine (the Python runtime's
// tests/runtime/test_engine_semantics.py, on flows compiled into test/fixtures/).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../src/clock.js";
import { StepResult } from "../src/history.js";
import { Instance } from "../src/instance.js";
import { Limits } from "../src/limits.js";
import { Machine } from "../src/machine.js";
import type { Outcome } from "../src/outcome.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");

function started(name: string, clock: FakeClock): Instance {
  const m = Machine.fromJSON(readFileSync(join(fixtures, `${name}.json`), "utf-8"));
  const inst = m.start({ clock: clock.now });
  if (!(inst instanceof Instance)) throw new Error(JSON.stringify(inst.toJSON()));
  return inst;
}

function targets(outcomes: Outcome[]): string[] {
  return outcomes.map((o) => (o instanceof StepResult ? o.to : `refused ${JSON.stringify(o.toJSON())}`));
}

const SECOND = 1000;
const HOUR = 3600 * SECOND;

describe("timers", () => {
  it("a deadline beside a repeating -> self timer fires at its time", () => {
    const clock = new FakeClock();
    const inst = started("repeat_and_deadline", clock);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(SECOND);
      seen.push(...targets(inst.advance()));
    }
    expect(seen).toEqual(["A", "A", "A", "B"]);
    expect(inst.state).toBe("B");
    expect(inst.context).toEqual({ n: 3 });
  });

  it("a late advance fires the deadline at its time too", () => {
    const clock = new FakeClock();
    const inst = started("repeat_and_deadline", clock);
    clock.advance(10 * SECOND);
    expect(targets(inst.advance())).toEqual(["A", "A", "A", "B"]);
    const start = clock.ms - 10 * SECOND;
    expect(inst.history.map((h) => Date.parse(String(h.at)) - start)).toEqual([0, 1000, 2000, 3000, 3000]);
  });

  it("a 72 h deadline beside a 24 h reminder fires", () => {
    const clock = new FakeClock();
    const inst = started("reminder", clock);
    clock.advance(72 * HOUR);
    expect(targets(inst.advance())).toEqual(["WAITING", "WAITING", "WAITING", "EXPIRED"]);
    expect(inst.context).toEqual({ reminders: 3 });
  });

  it("3314 ms then 1 ms reaches a 3315 ms deadline", () => {
    const clock = new FakeClock();
    const inst = started("boundary", clock);
    clock.advance(3314);
    expect(inst.advance()).toEqual([]);
    clock.advance(1);
    expect(targets(inst.advance())).toEqual(["B"]);
  });
});

describe("internal transitions", () => {
  it("a compound's rule to its own child keeps the compound active", () => {
    const clock = new FakeClock();
    const inst = started("compound_to_child", clock);
    for (let i = 0; i < 3; i++) {
      clock.advance(SECOND);
      expect(targets([inst.send("go")])).toEqual(["c2"]);
      expect(inst.configuration).toEqual(["P", "c2"]);
      expect(targets([inst.send("back")])).toEqual(["c1"]);
    }
    expect(inst.context).toEqual({ entries: 1, exits: 0 });
    clock.advance(2 * SECOND);
    expect(targets(inst.advance())).toEqual(["Q"]);
  });

  it("reenter makes it external: exit, entry and the timers restart", () => {
    const clock = new FakeClock();
    const inst = started("compound_to_child", clock);
    clock.advance(3 * SECOND);
    expect(targets([inst.send("again")])).toEqual(["c2"]);
    expect(inst.context).toEqual({ entries: 2, exits: 1 });
    clock.advance(3 * SECOND);
    expect(inst.advance()).toEqual([]);
    clock.advance(2 * SECOND);
    expect(targets(inst.advance())).toEqual(["Q"]);
  });
});

describe("parallel regions", () => {
  it("every step and history entry records the active leaves", () => {
    const clock = new FakeClock();
    const inst = started("regions", clock);
    expect(inst.state).toBe("Both");
    const step = inst.send("a");
    expect(step.toJSON()).toMatchObject({ from: "Both", to: "Both", source_leaves: ["L1", "R1"], target_leaves: ["L2", "R1"] });
    expect(inst.history[0]).toMatchObject({ target: "Both", source_leaves: [], target_leaves: ["L1", "R1"] });
    expect(inst.snapshot()).toMatchObject({ format: "flowc.snapshot/2", configuration: ["L2", "R1"] });
  });
});

describe("limits", () => {
  it("a machine's limits bound its instances' steps", () => {
    const ir = readFileSync(join(fixtures, "storm.json"), "utf-8");
    const clock = new FakeClock();
    const tight = Machine.fromJSON(ir, { limits: new Limits({ maxMicrosteps: 3 }) }).start({ clock: clock.now });
    const usual = Machine.fromJSON(ir).start({ clock: clock.now });
    if (!(tight instanceof Instance) || !(usual instanceof Instance)) throw new Error("not started");
    expect(tight.send("poke").toJSON()).toMatchObject({ error: "limit_exceeded", detail: "the step took more than 3 microsteps (Limits.max_microsteps)" });
    expect(usual.send("poke").toJSON()).toMatchObject({ detail: "the step took more than 100 microsteps (Limits.max_microsteps)" });
    expect(tight.context).toEqual({ n: 0 });
  });
});

describe("subscribers", () => {
  it("hear every committed step, not refusals or replays, until they unsubscribe", () => {
    const clock = new FakeClock();
    const inst = started("compound_to_child", clock);
    const heard: string[] = [];
    const stop = inst.subscribe((step) => heard.push(`${step.seq}:${step.to}`));
    inst.subscribe(() => {
      throw new Error("a broken subscriber");
    });
    inst.send("go", null, { key: "k" });
    inst.send("go", null, { key: "k" });
    inst.send("nothing");
    clock.advance(5 * SECOND);
    inst.advance();
    stop();
    inst.send("again");
    expect(heard).toEqual(["1:c2", "2:Q"]);
  });
});

describe("JSON out", () => {
  it("a step's toJSON and a snapshot are plain JSON (floats as numbers)", () => {
    const inst = started("gauge", new FakeClock());
    const step = inst.send("set", { value: 2 });
    const line = step.toJSON();
    expect(line.payload).toEqual({ value: 2 });
    expect(typeof (line.payload as Record<string, unknown>).value).toBe("number");
    const snap = inst.snapshot();
    expect(snap.context).toEqual({ level: 2 });
    expect(typeof (snap.context as Record<string, unknown>).level).toBe("number");
  });
});

describe("what a JavaScript caller may pass", () => {
  it("an event or target that is not a string is named as one", () => {
    const inst = started("compound_to_child", new FakeClock());
    expect(inst.send(42 as unknown as string).toJSON()).toMatchObject({ error: "unknown_event", event: "42" });
    expect(inst.goto(7 as unknown as string).toJSON()).toMatchObject({ error: "unknown_state", to: "7" });
    expect(inst.send("go", [1] as unknown as Record<string, unknown>).toJSON()).toMatchObject({ error: "invalid_payload" });
    expect(inst.send("go", [] as unknown as Record<string, unknown>).toJSON()).toMatchObject({ ok: true, to: "c2" });
  });
});
