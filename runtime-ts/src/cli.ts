#!/usr/bin/env node
// `flowc-run FLOW.json`: drive an instance of a compiled flow from the command line, as
// `flowc run` does (hosts/commands/run.py): the same options (--context, --events,
// --keep-going, --now, --snapshot), the same JSON lines, the same exit statuses (0 all accepted,
// 1 a rejection or a flow that does not load, 2 a usage error). It reads compiled JSON only:
// compiling a .flow file is the Python compiler's job.
import { readFileSync, realpathSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { FakeClock, Instance, Machine, toMs } from "./index.js";
import type { StepOptions } from "./instance.js";
import type { Outcome } from "./outcome.js";
import { childOf, childPath, lastSeqs, withTree } from "./treeLines.js";
import { parseJSON } from "./jsontext.js";
import { dumps, isDict, strRepr } from "./values.js";
import { outcomeLine } from "./vectors.js";
import { readSnapshot, resumable, saveSnapshot, unwritable } from "./snapshotFile.js";

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

const NAME = "flowc-run";

const HELP = `usage: flowc-run [-h] [--context JSON] [--events FILE] [--keep-going] [--now TIME] [--snapshot FILE] FLOW

Start an instance of FLOW (a compiled .json, from \`flowc compile\`) and drive it. Each
outcome is printed as a JSON line. Exit status: 0 when every operation was accepted, 1 on a
rejection (the first one, unless --keep-going) or when FLOW does not load, 2 for usage errors.

options:
  --context JSON  the start context, a JSON object
  --events FILE   operations to apply, JSON lines ('-' or none: standard input)
  --keep-going    go on after a rejection (the exit status is still 1)
  --now TIME      run on a simulated clock starting at TIME (ISO 8601 or epoch seconds);
                  \`advance\` then moves it
  --snapshot FILE resume from FILE if it exists; save the instance to FILE at the end

one JSON object a line (blank lines and lines starting with # are skipped):
  {"event": "submit", "payload": {...}, "reason": "...", "key": "..."}
  {"goto": "STATE", "force": false, "reason": "..."}
  {"back": true, "force": true}
  {"advance": 600}            move the clock on 600 s and fire due timers
`;

/** A usage error: exit status 2. */
class Usage extends Error {}
/** A run that stops with exit status 1 and a message. */
class Failure extends Error {}

/** Where the run writes: standard output and error, replaceable in tests. */
export interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

interface Options {
  flow: string;
  context: string | undefined;
  events: string | undefined;
  keepGoing: boolean;
  now: string | undefined;
  snapshot: string | undefined;
}

function options(argv: string[]): Options | "help" {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        context: { type: "string" },
        events: { type: "string" },
        "keep-going": { type: "boolean" },
        snapshot: { type: "string" },
        now: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new Usage(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help === true) return "help";
  if (positionals.length !== 1) {
    throw new Usage(positionals.length === 0 ? "the following arguments are required: FLOW" : `unrecognized arguments: ${positionals.slice(1).join(" ")}`);
  }
  return {
    flow: positionals[0] ?? "",
    context: values.context,
    events: values.events,
    keepGoing: values["keep-going"] === true,
    now: values.now,
    snapshot: values.snapshot,
  };
}

/** Run the command; its exit status. */
/** `stdin` reads standard input to its end; undefined when it is a terminal. */
export function main(argv: string[], io: Output, stdin: () => Buffer | undefined): number {
  try {
    const opts = options(argv);
    if (opts === "help") {
      io.out(HELP.trimEnd());
      return EXIT_OK;
    }
    return run(opts, io, stdin);
  } catch (error) {
    if (error instanceof Usage) {
      io.err(`${NAME}: ${error.message}`);
      return EXIT_USAGE;
    }
    if (error instanceof Failure) {
      io.err(`${NAME}: ${error.message}`);
      return EXIT_FAILURE;
    }
    throw error;
  }
}

function run(opts: Options, io: Output, stdin: () => Buffer | undefined): number {
  if (!isFile(opts.flow)) throw new Usage(`no such file: ${opts.flow}`);
  const clock = opts.now === undefined ? undefined : fakeClock(opts.now);
  const machine = load(opts.flow);
  const lines = opts.events === undefined || opts.events === "-" ? stdinLines(stdin) : readEvents(opts.events);
  const snapshot = opts.snapshot;
  const problem = snapshot === undefined ? null : unwritable(snapshot);
  if (problem !== null) throw new Usage(problem);
  const on = clock === undefined ? {} : { clock: clock.now };
  let instance: Instance;
  if (snapshot !== undefined && resumable(snapshot)) {
    if (opts.context !== undefined && opts.context !== "") throw new Usage("--context starts a new instance; the snapshot already has one");
    try {
      instance = machine.restore(readSnapshot(snapshot), on);
    } catch (error) {
      throw new Failure(`cannot resume from ${snapshot}: ${why(error)}`);
    }
  } else {
    const started = machine.start({ context: parseContext(opts.context), ...on });
    if (!(started instanceof Instance)) {
      emit(io, started.toJSON());
      return EXIT_FAILURE;
    }
    instance = started;
    emit(io, { ok: true, kind: "start", to: instance.state, seq: 0 });
  }
  let code = EXIT_FAILURE;
  try {
    code = runLines(instance, clock, lines, io, opts.keepGoing);
  } finally {
    const failed = snapshot === undefined ? null : saveSnapshot(snapshot, instance.snapshot());
    if (failed !== null) {
      io.err(`${NAME}: ${failed}`);
      code = EXIT_FAILURE;
    }
  }
  return code;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function exists(path: string): { dir: boolean } | undefined {
  try {
    return { dir: statSync(path).isDirectory() };
  } catch {
    return undefined;
  }
}

/** `--now`: epoch seconds (a number as Python's float() reads it) or ISO 8601. */
function fakeClock(text: string): FakeClock {
  const number = pythonFloat(text);
  try {
    return new FakeClock(toMs(number ?? text));
  } catch {
    throw new Usage(`--now: not a time: ${strRepr(text)}`);
  }
}

const FLOAT = /^\s*[+-]?(?:(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*\.)\s*$/;

function pythonFloat(text: string): number | undefined {
  return FLOAT.test(text) ? Number(text.replace(/_/g, "")) : undefined;
}

function load(path: string): Machine {
  if (path.endsWith(".flow")) {
    throw new Usage(`${path}: ${NAME} reads compiled flows: compile it first (flowc compile ${path} -o FLOW.json)`);
  }
  try {
    return Machine.fromJSON(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Failure(`${path}: ${why(error)}`);
  }
}

function why(error: unknown): string {
  if (error instanceof RangeError && /call stack/i.test(error.message)) return "nested too deeply";
  return error instanceof Error ? error.message : String(error);
}

function readEvents(source: string): string[] {
  const found = exists(source);
  if (found === undefined || found.dir) throw new Usage(`no such events file: ${source}`);
  let bytes: Buffer;
  try {
    bytes = readFileSync(source);
  } catch (error) {
    throw new Failure(`cannot read events file ${source}: ${why(error)}`);
  }
  return textLines(bytes, `events file ${source}`);
}

function stdinLines(stdin: () => Buffer | undefined): string[] {
  let bytes: Buffer | undefined;
  try {
    bytes = stdin();
  } catch (error) {
    throw new Failure(`cannot read the events: ${why(error)}`);
  }
  // `flowc run` opens its interactive prompt here; this command reads operations only.
  if (bytes === undefined) throw new Usage("no interactive prompt here: give --events FILE, or pipe the operations in");
  return textLines(bytes, "standard input", UNIVERSAL_NEWLINE);
}

/** Python's str.splitlines() (how `flowc run` splits an events file): every line boundary it
 * knows; and the universal newlines its standard input is read with. */
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const UNIVERSAL_NEWLINE = /\r\n|\r|\n/;

function textLines(bytes: Buffer, what: string, breaks: RegExp = LINE_BREAK): string[] {
  let text: string;
  try {
    // A byte order mark stays: Python's json.loads refuses a line that starts with one.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new Failure(`${what} is not UTF-8 text: invalid UTF-8`);
  }
  const lines = text.split(breaks);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** Python's str.strip(): the characters str.isspace() counts (not the byte order mark,
 * which JavaScript's trim() removes). */
const PY_SPACE = "[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const PY_STRIP = new RegExp(`^${PY_SPACE}+|${PY_SPACE}+$`, "g");

function pyStrip(text: string): string {
  return text.replace(PY_STRIP, "");
}

function parseContext(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined || text === "") return undefined;
  let value: unknown;
  try {
    value = parseJSON(text);
  } catch (error) {
    if (error instanceof RangeError) throw new Usage("--context is nested too deeply");
    throw new Usage(`--context is not JSON: ${why(error)}`);
  }
  if (!isDict(value)) throw new Usage("--context must be a JSON object");
  return value;
}

/** One JSON line, written as Python's json.dumps writes it (ints and floats told apart). */
function emit(io: Output, data: unknown): void {
  io.out(dumps(data));
}

/** The outcome objects of one operation, as `flowc run` prints them. */
type Line = Record<string, unknown>;

function runLines(instance: Instance, clock: FakeClock | undefined, lines: string[], io: Output, keepGoing: boolean): number {
  let code = EXIT_OK;
  for (const [i, line] of lines.entries()) {
    const text = pyStrip(line);
    if (text === "" || text.startsWith("#")) continue;
    let outcomes: Line[];
    try {
      const op: unknown = parseJSON(text);
      if (!isDict(op)) throw new TypeError("a line must be a JSON object");
      outcomes = applyLine(instance, op, clock);
    } catch (error) {
      if (!(error instanceof SyntaxError || error instanceof TypeError || error instanceof RangeError)) throw error;
      io.err(`${NAME}: events line ${i + 1}: ${why(error)}`);
      return EXIT_FAILURE;
    }
    for (const outcome of outcomes) {
      emit(io, outcome);
      if (outcome.ok !== true) {
        code = EXIT_FAILURE;
        if (!keepGoing) return code;
      }
    }
  }
  return code;
}

/** One operation of an events file (to the instance, or with `child` to its child flow at
 * that path), then the other steps it committed in the tree; a TypeError for a malformed one. */
export function applyLine(instance: Instance, op: Record<string, unknown>, clock: FakeClock | undefined): Line[] {
  const child = childOf(op);
  const { reason, key, force } = common(op);
  if (instance.tree === null) return applyOp(instance, op, clock, child, { force, reason, key });
  const before = lastSeqs(instance);
  const path = child === null ? "" : childPath(instance, child);
  return withTree(instance, applyOp(instance, op, clock, child, { force, reason, key }), before, path);
}

function applyOp(instance: Instance, op: Record<string, unknown>, clock: FakeClock | undefined, child: string | null, opts: StepOptions): Line[] {
  const on = (event: string | null, step: (i: Instance) => Outcome): Line[] => [
    outcomeLine(child === null ? step(instance) : instance.onChild(child, step, event), instance),
  ];
  if ("event" in op) {
    const event = name(op, "event");
    const given = payload(op);
    return on(event, (i) => i.send(event, given, opts));
  }
  if ("goto" in op) {
    const target = name(op, "goto");
    return on(null, (i) => i.goto(target, opts));
  }
  if ("back" in op) return on(null, (i) => i.back(opts));
  if ("advance" in op) {
    const ms = seconds(op) * 1000;
    const outcomes = clock === undefined ? instance.advance(Date.now() + ms) : (clock.advance(ms), instance.advance());
    // (a child's step is printed as the child's, after: not as the root's `child` entry)
    return outcomes.filter((o) => !o.ok || o.kind !== "child").map((o) => outcomeLine(o, instance));
  }
  throw new TypeError("expected one of `event`, `goto`, `back`, `advance`");
}

function common(op: Record<string, unknown>): { reason: string | undefined; key: string | undefined; force: boolean } {
  for (const field of ["reason", "key"]) {
    const value = op[field];
    if (value !== undefined && value !== null && typeof value !== "string") throw new TypeError(`\`${field}\` must be a string`);
  }
  const force = "force" in op ? op.force : false;
  if (typeof force !== "boolean") throw new TypeError("`force` must be true or false");
  return { reason: stringOr(op.reason), key: stringOr(op.key), force };
}

function stringOr(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function name(op: Record<string, unknown>, field: string): string {
  const value = op[field];
  if (typeof value !== "string") throw new TypeError(`\`${field}\` must be a string`);
  return value;
}

function payload(op: Record<string, unknown>): Record<string, unknown> | undefined {
  const value = op.payload;
  if (value === undefined || value === null) return undefined;
  if (!isDict(value)) throw new TypeError("`payload` must be an object");
  return value;
}

function seconds(op: Record<string, unknown>): number {
  const value = op.advance;
  if (typeof value !== "number" || !Number.isFinite(value)) throw new TypeError("`advance` takes a number of seconds");
  if (value < 0) throw new TypeError("`advance` cannot go back in time");
  return value;
}

// Run when this file is the program (not when a test imports it).
function isProgram(): boolean {
  const started = process.argv[1];
  if (started === undefined) return false;
  try {
    return realpathSync(started) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isProgram()) {
  // A reader that stops early (`flowc-run ... | head`) ends the run, without a stack trace.
  process.stdout.on("error", () => process.exit(EXIT_FAILURE));
  const stdinBytes = (): Buffer | undefined => (process.stdin.isTTY ? undefined : readFileSync(0));
  process.exitCode = main(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }, stdinBytes);
}
