// What this runtime offers along every vector (tests/ts/test_offers_interop.py runs this with
// vite-node and compares with the Python runtime's `accepted_events` / `allowed_targets`):
// one JSON line per vector, {"file", "vector", "offers": [after the start, after op 1, ...]},
// each {"accepted": [names], "targets": [...], "forced": [...], "templates": {name: text}}.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { FakeClock } from "../../src/clock.js";
import { Instance } from "../../src/instance.js";
import { Machine } from "../../src/machine.js";
import { applyOp, type VectorFile } from "../../src/vectors.js";

function rendered(inst: Instance, name: string): string {
  try {
    return inst.render(name);
  } catch {
    return "(cannot be rendered)";
  }
}

function offers(inst: Instance): Record<string, unknown> {
  return {
    accepted: inst.acceptedEvents().map((e) => e.name),
    targets: inst.allowedTargets(),
    forced: inst.allowedTargets({ force: true }),
    templates: Object.fromEntries(Object.keys(inst.machine.flow.templates).map((name) => [name, rendered(inst, name)])),
  };
}

for (const path of process.argv.slice(2)) {
  const data = JSON.parse(readFileSync(path, "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  for (const v of data.vectors) {
    const clock = new FakeClock(v.now);
    const inst = machine.start({ context: v.context, clock: clock.now });
    if (!(inst instanceof Instance)) continue;
    const seen = [offers(inst)];
    for (const op of v.ops) {
      applyOp(inst, clock, op);
      seen.push(offers(inst));
    }
    process.stdout.write(JSON.stringify({ file: basename(path), vector: v.name, offers: seen }) + "\n");
  }
}
