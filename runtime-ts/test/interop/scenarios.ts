// Scenarios run on this runtime for tests/ts/test_scenarios_interop.py, which runs the same
// on the Python runtime and compares. Reads a JSON file of cases
// [{"name", "ir", "context", "now", "ops": [vector ops without expects]}] and prints one JSON
// line per case: {"name", "seen": [what the start answered, then each op's outcomes, each
// with the instance's state, configuration, context, final; with "roundtrip", after each op
// {"snapshot"}, the instance restored from it going on], "snapshot"}.
import { readFileSync } from "node:fs";
import { FakeClock } from "../../src/clock.js";
import { Instance } from "../../src/instance.js";
import { Machine } from "../../src/machine.js";
import { applyOp, asJson, outcomeLine, type Op } from "../../src/vectors.js";

interface Case {
  name: string;
  ir: Record<string, unknown>;
  context: Record<string, unknown> | null;
  now: number;
  ops: Op[];
  checkInvariants: boolean;
  /** after every op, the snapshot is taken (and printed) and the run goes on from it */
  roundtrip: boolean;
}

function observed(inst: Instance, line: unknown): unknown {
  return asJson({ line, state: inst.state, configuration: inst.configuration, context: inst.context, final: inst.isFinal });
}

const path = process.argv[2] ?? "";
for (const c of JSON.parse(readFileSync(path, "utf-8")) as Case[]) {
  const clock = new FakeClock(c.now);
  const machine = Machine.fromJSON(c.ir, { checkInvariants: c.checkInvariants });
  let inst = machine.start({ context: c.context, clock: clock.now });
  if (!(inst instanceof Instance)) {
    process.stdout.write(JSON.stringify({ name: c.name, seen: [asJson(inst.toJSON())], snapshot: null }) + "\n");
    continue;
  }
  const seen: unknown[] = [{ ...(observed(inst, { ok: true, kind: "start", to: inst.state, seq: 0 }) as object), effects: asJson(inst.startEffects) }];
  for (const op of c.ops) {
    const now = inst;
    seen.push(applyOp(now, clock, op).map((o) => observed(now, outcomeLine(o, now))));
    if (!c.roundtrip) continue;
    const taken = asJson(now.snapshot()) as Record<string, unknown>;
    seen.push({ snapshot: taken });
    inst = machine.restore(taken, { clock: clock.now });
  }
  process.stdout.write(JSON.stringify({ name: c.name, seen, snapshot: asJson(inst.snapshot()) }) + "\n");
}
