// Child flows (IR version 5) on this runtime: what a host sees of a tree of instances (the
// Python runtime's tests/runtime/test_children.py; flows compiled into test/fixtures/children/
// by `flowc compile`; tests/ts/test_scenarios_interop.py compares both runtimes on them).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../src/clock.js";
import { StepResult } from "../src/history.js";
import { Instance, UnknownChild } from "../src/instance.js";
import { IRLoadError } from "../src/ir.js";
import { Machine } from "../src/machine.js";
import type { Outcome } from "../src/outcome.js";
import { endInvoke, MAX_DELIVERIES, SnapshotError, SNAPSHOT_FORMAT_4 } from "../src/index.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "children");
const T0 = 1_767_225_600_000;

function ir(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(fixtures, `${name}.json`), "utf-8")) as Record<string, unknown>;
}

function started(name: string, clock = new FakeClock(T0), opts: { id?: string; context?: Record<string, unknown> } = {}): Instance {
  const inst = Machine.fromJSON(ir(name)).start({ clock: clock.now, ...opts });
  if (!(inst instanceof Instance)) throw new Error(JSON.stringify(inst.toJSON()));
  return inst;
}

function ok(outcome: Outcome): StepResult {
  if (!(outcome instanceof StepResult)) throw new Error(JSON.stringify(outcome.toJSON()));
  return outcome;
}

function kinds(inst: Instance): [unknown, unknown][] {
  return inst.history.map((h) => [h.kind, h.event]);
}

describe("one child", () => {
  it("starts when its state is entered, with the id ID.SEQ (under the parent's id), into a field", () => {
    const shop = started("shop", new FakeClock(T0), { id: "s-1" });
    expect(Object.keys(shop.children)).toEqual([]);
    ok(shop.send("buy"));
    expect(Object.keys(shop.children)).toEqual(["pay.1"]);
    const pay = shop.child("pay");
    expect(pay.id).toBe("s-1/pay.1");
    expect(pay.context).toEqual({ amount: 5, tries: 0 });
    expect(shop.context.pid).toBe("s-1/pay.1");
  });

  it("of a root's initial state is started, and heard from, before the start returns", () => {
    const eager = started("eager");
    expect(Object.keys(eager.children)).toEqual(["pay.0"]);
    expect(eager.context.started).toBe(3);
    // (the child's start is an entry of kind `child` in its root's history)
    expect(kinds(eager)).toEqual([["start", null], ["child", null], ["message", "started"]]);
    expect(eager.history[1]?.payload).toEqual({ child: "pay.0", seq: 0, from: null, to: "waiting" });
    ok(eager.child("pay").send("approve"));
    expect(eager.context.receipt).toBe("r-3");
  });

  it("is never started when its state is entered and left in one step", () => {
    const shop = started("shop");
    expect(ok(shop.send("skip")).to).toBe("browsing");
    expect(shop.children).toEqual({});
    expect(shop.context.started).toBe(0);
  });

  it("sends to its parent: delivered after the step, as a step of kind message", () => {
    const shop = started("shop");
    ok(shop.send("buy"));
    expect(shop.context.started).toBe(5);
    expect(kinds(shop)).toEqual([["start", null], ["event", "buy"], ["child", null], ["message", "started"]]);
    ok(shop.send("leave"));
    const bought = ok(shop.send("buy"));
    expect(bought.then.map((r) => [r.kind, r.entry.event])).toEqual([["child", null], ["message", "started"]]);
  });

  it("gets what its parent sends to its invoke's id", () => {
    const shop = started("shop");
    ok(shop.send("buy"));
    ok(shop.send("poke"));
    expect(shop.child("pay").context.tries).toBe(10);
  });

  it("ends with its done data: done.invoke.ID to the parent", () => {
    const shop = started("shop");
    ok(shop.send("buy"));
    ok(shop.child("pay").send("approve"));
    expect(shop.state).toBe("paid");
    expect(shop.context.receipt).toBe("r-5");
    expect(shop.history.at(-1)).toMatchObject({ kind: "message", event: "done.invoke.pay", payload: { receipt: "r-5", tries: 0 } });
  });

  it("fails: error.invoke.ID with the kind of the fault in its done data", () => {
    const shop = started("shop");
    ok(shop.send("buy"));
    ok(shop.child("pay").send("fail"));
    expect(shop.state).toBe("browsing");
    expect(shop.context.why).toBe("expression_error");
  });

  it("is heard from after its state was left: what it said before, and its end", () => {
    const ghost = started("ghost");
    ok(ghost.send("buy"));
    const pay = ghost.child("pay");
    ok(pay.send("approve")); // (`bye` moves the parent on, cancelling it; `later` and its end follow)
    expect(ghost.state).toBe("paid");
    expect(ghost.context).toEqual({ receipt: "r-1", left: 11 });
    expect(ghost.children).toEqual({});
  });

  it("whose start is refused is error.invoke.ID with the refusal's kind", () => {
    const shop = started("strict_shop", new FakeClock(T0), { context: { total: -1 } });
    ok(shop.send("buy"));
    expect(shop.context.why).toBe("expression_error");
    expect(shop.children).toEqual({});
  });

  it("is cancelled when its state is left, and when the parent ends", () => {
    const shop = started("shop");
    ok(shop.send("buy"));
    ok(shop.send("leave"));
    expect(shop.children).toEqual({});
    expect(shop.onChild("pay", (c) => c.send("approve"), "approve").toJSON()).toMatchObject({ error: "unknown_child", child: "pay" });
    ok(shop.send("buy"));
    expect(Object.keys(shop.children)).toEqual(["pay.5"]); // (2: the child's start, 3: its `started`)
    ok(shop.send("quit"));
    expect(shop.isFinal).toBe(true);
    expect(shop.children).toEqual({});
  });
});

describe("fan-out", () => {
  it("join all: the results in item order, after finalize ran for each", () => {
    const pr = started("pr_all");
    ok(pr.send("open"));
    expect(Object.keys(pr.children)).toEqual(["reviews.1.0", "reviews.1.1", "reviews.1.2"]);
    expect(pr.child("reviews[1]").context).toEqual({ reviewer: "ben", position: 1 });
    ok(pr.child("reviews[2]").send("approve"));
    ok(pr.child("reviews.1.0").send("reject"));
    expect(pr.state).toBe("reviewing");
    ok(pr.child("reviews[1]").send("approve"));
    expect(pr.state).toBe("decided");
    expect(pr.context).toMatchObject({ verdicts: ["ana", "ben", "cy"], seen: 3 });
  });

  it("join any: the first done wins, the others are cancelled", () => {
    const pr = started("pr_any");
    ok(pr.send("open"));
    ok(pr.child("reviews[1]").send("approve"));
    expect(pr.state).toBe("decided");
    expect(pr.context.verdicts).toEqual(["ben"]);
    expect(() => pr.child("reviews[0]")).toThrow(UnknownChild);
  });

  it("join N: error.invoke.ID of kind join once it can no longer be met", () => {
    const pr = started("pr_two");
    ok(pr.send("open"));
    ok(pr.child("reviews[0]").send("explode"));
    expect(pr.state).toBe("reviewing");
    ok(pr.child("reviews[2]").send("explode"));
    expect(pr.state).toBe("failed");
    expect(pr.context.failure).toBe("join: invoke reviews: 2 of its 3 children failed; 2 had to finish");
  });

  it("over an empty list is done at once with no results; needing more than it has fails", () => {
    const none = started("pr_none");
    ok(none.send("open"));
    expect(none.state).toBe("decided");
    expect(none.history.at(-1)).toMatchObject({ kind: "message", event: "done.invoke.reviews", payload: { results: [] } });
    const four = started("pr_four");
    ok(four.send("open"));
    expect(four.state).toBe("failed");
    expect(four.context.failure).toBe("join: invoke reviews needs 4 of its children, and has 3");
  });
});

describe("the tree", () => {
  it("forwards a host event to a `forward` invoke's children; one they refuse is dropped", () => {
    const top = started("top");
    ok(top.send("begin"));
    expect(kinds(top.child("mid"))).toEqual([["start", null]]); // (`begin` is not middle's)
    ok(top.send("relay"));
    expect(top.state).toBe("finished");
    expect(top.context.got).toBe(7);
  });

  it("forwards a message the parent took, and a scheduled event it took, to the child too", () => {
    const clock = new FakeClock(T0);
    const loud = started("loud", clock);
    ok(loud.send("go"));
    expect(loud.context.n).toBe(100); // (the child's `note` to its parent)
    expect(loud.child("e").context).toEqual({ ticks: 0, notes: 1 });
    clock.advance(1000);
    loud.advance();
    expect(loud.context.n).toBe(101);
    expect(loud.child("e").context).toEqual({ ticks: 1, notes: 1 });
  });

  it("is put back when an invariant refuses the step that changed it", () => {
    const m = Machine.fromJSON(ir("guarded"), { checkInvariants: true });
    const inst = m.start({ clock: new FakeClock(T0).now }) as Instance;
    const before = inst.snapshot();
    expect(inst.send("bump").toJSON()).toMatchObject({ error: "invariant_violated" });
    expect(inst.snapshot()).toEqual(before);
    ok(inst.child("pay").send("approve"));
    expect(inst.state).toBe("paid");
  });

  it("addresses grandchildren by path, and fires the tree's timers from the root in deadline order", () => {
    const clock = new FakeClock(T0);
    const top = started("top", clock);
    ok(top.send("begin"));
    expect(top.child("mid/inner").state).toBe("lit");
    expect(top.child("mid.1/inner.0")).toBe(top.child("mid").child("inner"));
    expect(top.nextDeadline).toBe(T0 + 5000);
    expect(top.advance(T0 + 4999)).toEqual([]);
    const fired = top.advance(T0 + 5000);
    // (every step of the tree the call committed: the children's as entries of kind `child`)
    expect(fired.map((o) => (o instanceof StepResult ? [o.kind, o.entry.event] : "refused"))).toEqual([
      ["child", null], ["child", "done.invoke.inner"], ["message", "done.invoke.mid"],
    ]);
    expect(fired[0]?.toJSON()).toMatchObject({ from: "running", to: "running", payload: { child: "mid.1/inner.0", seq: 1, from: "lit", to: "done" } });
    expect(top.context.got).toBe(5);
    expect(top.nextDeadline).toBeNull();
  });

  it("delivers at most MAX_DELIVERIES messages per host call; the rest wait in the inbox", () => {
    const pong = started("pong");
    ok(pong.send("serve"));
    expect(pong.context.hits).toBe(MAX_DELIVERIES / 2);
    const snap = pong.snapshot();
    expect(snap.format).toBe(SNAPSHOT_FORMAT_4);
    expect(snap.inbox).toHaveLength(1);
    // (messages left past the bound are due at once, so that a worker's advance delivers them)
    expect(pong.nextDeadline).toBe(T0);
    const again = Machine.fromJSON(ir("pong")).restore(snap);
    // (as in Python: the advance delivers what was left, up to the bound, then once more after
    // its timers, then the host call once more)
    again.advance(T0);
    expect(again.context.hits).toBe(MAX_DELIVERIES / 2 + (3 * MAX_DELIVERIES) / 2);
  });

  it("snapshots the whole tree (flowc.snapshot/4) and runs on from it", () => {
    const pr = started("pr_all");
    ok(pr.send("open"));
    ok(pr.child("reviews[0]").send("approve"));
    const snap = pr.snapshot();
    expect(snap.format).toBe(SNAPSHOT_FORMAT_4);
    expect((snap.children as { id: string }[]).map((c) => c.id)).toEqual(["reviews.1.0", "reviews.1.1", "reviews.1.2"]);
    expect(snap.joins).toEqual([{ invoke: "reviews", seq: 1, fan: true, needed: 3, results: [{ reviewer: "ana", ok: true, position: 0 }, null, null], finished: [true, false, false], failed: 0 }]);
    const back = Machine.fromJSON(ir("pr_all")).restore(JSON.stringify(snap));
    expect(back.snapshot()).toEqual(snap);
    ok(back.child("reviews[1]").send("approve"));
    ok(back.child("reviews[2]").send("reject"));
    expect(back.context.verdicts).toEqual(["ana", "ben", "cy"]);
  });

  it("refuses a snapshot whose children do not fit the flow", () => {
    const pr = started("pr_all");
    ok(pr.send("open"));
    const snap = pr.snapshot();
    const m = Machine.fromJSON(ir("pr_all"));
    const kids = snap.children as Record<string, unknown>[];
    expect(() => m.restore({ ...snap, children: [{ ...kids[0], invoke: "nope" }] })).toThrow(SnapshotError);
    expect(() => m.restore({ ...snap, joins: [{ invoke: "reviews", seq: 1, fan: true, needed: 3, results: [], finished: [true], failed: 0 }] })).toThrow(
      /cannot be restored/,
    );
    expect(() => m.restore({ ...snap, inbox: 5 })).toThrow(SnapshotError);
  });

  it("ends an invoke's children as a black box (endInvoke)", () => {
    const shop = started("shop");
    expect(endInvoke(shop, "pay", { receipt: "x", tries: 1 })).toBeNull();
    ok(shop.send("buy"));
    ok(endInvoke(shop, "pay", { receipt: "x", tries: 1 }) as Outcome);
    expect(shop.context.receipt).toBe("x");
  });
});

describe("subscribers", () => {
  it("hear of every committed step of their instance: message steps and a child's timers too", () => {
    const clock = new FakeClock(T0);
    const shop = started("shop", clock);
    const seen: string[] = [];
    shop.subscribe((r) => seen.push(`shop ${r.entry.kind} ${String(r.entry.event)}`));
    ok(shop.send("buy"));
    const pay = shop.child("pay");
    pay.subscribe((r) => seen.push(`pay ${r.entry.kind} ${r.entry.event ?? r.to}`));
    ok(shop.send("poke"));
    clock.advance(600_000);
    expect(shop.advance().map((o) => (o as StepResult).kind)).toEqual(["child", "message"]);
    expect(seen).toEqual([
      "shop event buy", "shop message started",
      "shop event poke", "pay message nudge",
      "pay timer timed_out", "shop message done.invoke.pay",
    ]);
  });
});

describe("loading IR version 5", () => {
  it("refuses an invoke of a flow it does not embed, an id used twice, an unknown member", () => {
    const raw = ir("shop");
    const states = raw.states as Record<string, unknown>[];
    const withInvoke = (invokes: unknown[]): Record<string, unknown> => ({ ...raw, states: states.map((s) => (s.name === "paying" ? { ...s, invokes } : s)) });
    const inv = (states.find((s) => s.name === "paying")?.invokes as Record<string, unknown>[])[0] ?? {};
    expect(() => Machine.fromJSON({ ...raw, children: {} })).toThrow(/not a child flow/);
    expect(() => Machine.fromJSON(withInvoke([inv, inv]))).toThrow(/used twice/);
    expect(() => Machine.fromJSON(withInvoke([{ ...inv, after: 1 }]))).toThrow(IRLoadError);
  });
});
