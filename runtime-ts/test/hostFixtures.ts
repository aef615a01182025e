// Compiled flows for the host-side tests (cli, tools, MCP example): the IR each shared
// vectors file carries (test/vectors/, written by `flowc vectors`).
import { readFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const VECTORS = new URL("./vectors/", import.meta.url);

/** The compiled IR of the flow whose vectors file is `stem`.vectors.json. */
export function compiledIR(stem: string): Record<string, unknown> {
  const file = JSON.parse(readFileSync(new URL(`${stem}.vectors.json`, VECTORS), "utf8")) as { ir: Record<string, unknown> };
  return file.ir;
}

/** The IR of `stem` written to a file of its own (for commands that read a path). */
export function compiledFile(stem: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "flowc-ts-")), `${stem}.json`);
  writeFileSync(path, JSON.stringify(compiledIR(stem)));
  return path;
}
