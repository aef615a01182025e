// Every vector of every file under test/vectors/ (written by `flowc vectors` on the Python
// runtime) runs on this runtime: a test per vector, from its start, and from the Python
// runtime's snapshot (Python -> TS interop).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Machine } from "../src/machine.js";
import { runFromSnapshot, runVector, type VectorFile } from "../src/vectors.js";

const folder = join(dirname(fileURLToPath(import.meta.url)), "vectors");
const files = readdirSync(folder).filter((f) => f.endsWith(".vectors.json")).sort();

describe.each(files)("%s", (file) => {
  const data = JSON.parse(readFileSync(join(folder, file), "utf-8")) as VectorFile;
  const machine = Machine.fromJSON(data.ir);
  it.each(data.vectors.map((v) => [v.name, v] as const))("%s", (_name, v) => {
    expect(runVector(machine, v).join("\n")).toBe("");
  });
  const restored = data.vectors.filter((v) => v.snapshot !== undefined);
  it.each(restored.map((v) => [v.name, v] as const))("restored from Python: %s", (_name, v) => {
    expect(runFromSnapshot(machine, v).join("\n")).toBe("");
  });
});
