import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, main } from "../src/cli.js";
import { compiledFile } from "./hostFixtures.js";

interface Run {
  code: number;
  out: unknown[];
  err: string[];
}

/** `stdin`: what standard input holds; null for a terminal. */
function run(argv: string[], stdin: string | null = ""): Run {
  const out: unknown[] = [];
  const err: string[] = [];
  const code = main(argv, { out: (l) => out.push(JSON.parse(l)), err: (l) => err.push(l) }, () =>
    stdin === null ? undefined : Buffer.from(stdin, "utf8"),
  );
  return { code, out, err };
}

function events(...lines: string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), "flowc-run-")), "ops.jsonl");
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

const RFP = compiledFile("rfp_workspace");
const NOW = ["--now", "2025-01-01T00:00:00Z"];

describe("flowc-run", () => {
  it("prints the start and each outcome as a JSON line", () => {
    const ops = events('{"goto": "ANALYZING", "reason": "go"}', "# a comment", "", '{"goto": "QNA_GENERATION"}');
    const r = run([RFP, "--context", '{"project": "p"}', "--events", ops, ...NOW]);
    expect(r.code).toBe(EXIT_OK);
    expect(r.out.map((o) => (o as { to: string }).to)).toEqual(["RFP_RECEIVED", "ANALYZING", "QNA_GENERATION"]);
    expect(r.out[1]).toMatchObject({ ok: true, reason: "go", at: "2025-01-01T00:00:00+00:00", final: false });
  });

  it("stops at the first rejection with exit 1, or goes on with --keep-going", () => {
    const ops = events('{"goto": "DRAFTING"}', '{"goto": "ANALYZING"}');
    const first = run([RFP, "--context", '{"project": "p"}', "--events", ops, ...NOW]);
    expect(first.code).toBe(EXIT_FAILURE);
    expect(first.out).toHaveLength(2);
    expect(first.out[1]).toMatchObject({ ok: false, error: "invalid_transition" });
    const all = run([RFP, "--context", '{"project": "p"}', "--events", ops, "--keep-going", ...NOW]);
    expect(all.code).toBe(EXIT_FAILURE);
    expect(all.out).toHaveLength(3);
  });

  it("reads the operations from standard input", () => {
    const r = run([RFP, "--context", '{"project": "p"}', ...NOW], '{"goto": "ANALYZING"}\n');
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toHaveLength(2);
  });

  it("has no interactive prompt: a terminal on standard input is a usage error", () => {
    const r = run([RFP, "--context", '{"project": "p"}'], null);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.err[0]).toMatch(/^flowc-run: no interactive prompt here/);
  });

  it("exits 1 when standard input cannot be read", () => {
    const err: string[] = [];
    const code = main([RFP, "--context", '{"project": "p"}'], { out: () => undefined, err: (l) => err.push(l) }, () => {
      throw new Error("EAGAIN: resource temporarily unavailable, read");
    });
    expect(code).toBe(EXIT_FAILURE);
    expect(err).toEqual(["flowc-run: cannot read the events: EAGAIN: resource temporarily unavailable, read"]);
  });

  it("refuses a start context the flow refuses, on one line", () => {
    const r = run([RFP, "--context", '{"project": 5}', ...NOW], "");
    expect(r.code).toBe(EXIT_FAILURE);
    expect(r.out).toEqual([expect.objectContaining({ ok: false, error: "invalid_context" })]);
  });

  it.each([
    [["NO_SUCH.json"], "no such file: NO_SUCH.json"],
    [[RFP, "--context", "[1]"], "--context must be a JSON object"],
    [[RFP, "--context", "{bad"], "--context is not JSON: "],
    [[RFP, "--now", "someday"], "--now: not a time: 'someday'"],
    [[RFP, "--events", "NO_SUCH.jsonl"], "no such events file: NO_SUCH.jsonl"],
    [[RFP, "--store", "memory:"], "Unknown option '--store'"],
    [[RFP, "--snapshot", "."], "--snapshot . is a directory"],
    [[], "the following arguments are required: FLOW"],
    [["flows/x.flow"], "no such file: flows/x.flow"],
  ])("exits 2 on a usage error: %j", (argv, message) => {
    const r = run(argv);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.out).toEqual([]);
    expect(r.err[0]).toContain(`flowc-run: ${message}`);
  });

  it("reads compiled flows only", () => {
    const source = join(mkdtempSync(join(tmpdir(), "flowc-run-")), "x.flow");
    writeFileSync(source, "flow x\n");
    const r = run([source]);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.err[0]).toContain("compile it first");
  });

  it("exits 1 for a compiled flow it cannot load", () => {
    const broken = join(mkdtempSync(join(tmpdir(), "flowc-run-")), "broken.json");
    writeFileSync(broken, '{"ir_version": 99}');
    const r = run([broken]);
    expect(r.code).toBe(EXIT_FAILURE);
    expect(r.err[0]).toMatch(/^flowc-run: .*broken\.json: /);
  });

  it.each([
    ["[1]", "a line must be a JSON object"],
    ['{"event": 5}', "`event` must be a string"],
    ['{"goto": "ANALYZING", "force": null}', "`force` must be true or false"],
    ['{"advance": -1}', "`advance` cannot go back in time"],
    ['{"advance": true}', "`advance` takes a number of seconds"],
    ['{"jump": 1}', "expected one of `event`, `goto`, `back`, `advance`"],
  ])("stops on a malformed line with exit 1: %s", (line, message) => {
    const r = run([RFP, "--context", '{"project": "p"}', "--events", events('{"goto": "ANALYZING"}', line), ...NOW]);
    expect(r.code).toBe(EXIT_FAILURE);
    expect(r.out).toHaveLength(2);
    expect(r.err).toEqual([`flowc-run: events line 2: ${message}`]);
  });

  it("moves the simulated clock with advance and fires the timers due", () => {
    const pr = compiledFile("pr_review");
    const r = run([pr, "--events", events('{"advance": 604800}'), "--now", "1735689600"]);
    expect(r.code).toBe(EXIT_OK);
    expect(r.out.length).toBeGreaterThan(1);
    // (pr_review invokes child flows: their steps are lines too, as `kind: "child"` entries)
    expect(r.out.slice(1)).toContainEqual(expect.objectContaining({ ok: true, kind: "timer", at: "2025-01-08T00:00:00+00:00" }));
  });

  it("prints its help", () => {
    const out: string[] = [];
    expect(main(["--help"], { out: (l) => out.push(l), err: () => undefined }, () => undefined)).toBe(EXIT_OK);
    expect(out[0]).toMatch(/^usage: flowc-run/);
  });
});

describe("flowc-run --snapshot", () => {
  it("saves the instance at the end and resumes from it", () => {
    const file = join(mkdtempSync(join(tmpdir(), "flowc-run-")), "deep", "s.json");
    const first = run([RFP, "--context", '{"project": "p"}', "--snapshot", file, "--events", events('{"goto": "ANALYZING"}'), ...NOW]);
    expect(first.code).toBe(EXIT_OK);
    const second = run([RFP, "--snapshot", file, "--events", events('{"goto": "QNA_GENERATION"}'), ...NOW]);
    expect(second.code).toBe(EXIT_OK);
    expect(second.out).toEqual([expect.objectContaining({ from: "ANALYZING", to: "QNA_GENERATION", seq: 2 })]);
    const again = run([RFP, "--context", '{"project": "p"}', "--snapshot", file]);
    expect(again.code).toBe(EXIT_USAGE);
    expect(again.err).toEqual(["flowc-run: --context starts a new instance; the snapshot already has one"]);
  });

  it("refuses a file that is not a snapshot of the flow, with exit 1", () => {
    const file = join(mkdtempSync(join(tmpdir(), "flowc-run-")), "s.json");
    writeFileSync(file, "[1]");
    const r = run([RFP, "--snapshot", file]);
    expect(r.code).toBe(EXIT_FAILURE);
    expect(r.err).toEqual([`flowc-run: cannot resume from ${file}: a snapshot is a JSON object`]);
  });
});
