// TS -> Python snapshot interop (tests/ts/test_snapshot_interop.py runs this with vite-node):
// for every vector of the vectors files named on the command line, this runtime's snapshot
// after the op where the Python runtime took its own, one JSON line each:
// {"file", "vector", "after", "snapshot"} (snapshot null: the instance did not start).
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { Machine } from "../../src/machine.js";
import { snapshotAfter, type VectorFile } from "../../src/vectors.js";

for (const path of process.argv.slice(2)) {
  const data = JSON.parse(readFileSync(path, "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  for (const v of data.vectors) {
    const after = v.snapshot?.after ?? Math.floor((v.ops.length + 1) / 2);
    const snapshot = snapshotAfter(machine, v, after);
    process.stdout.write(JSON.stringify({ file: basename(path), vector: v.name, after, snapshot }) + "\n");
  }
}
