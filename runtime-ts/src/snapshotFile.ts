// `flowc-run --snapshot FILE`: resume from FILE when it exists, save the instance to it at the
// end, as `flowc run --snapshot` does (a snapshot written by either command resumes in the
// other: both write the same format, flowc.snapshot/2).
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseJSON } from "./jsontext.js";
import { dumps, isDict } from "./values.js";

function stat(path: string): { file: boolean; dir: boolean } | undefined {
  try {
    const s = statSync(path);
    return { file: s.isFile(), dir: s.isDirectory() };
  } catch {
    return undefined;
  }
}

/** An OS error's words (Python's `strerror`: "Permission denied"), else the message. */
export function osWhy(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const found = /^[A-Z]+: ([^,]+)/.exec(error.message);
  const words = found?.[1];
  return words === undefined ? error.message : words.charAt(0).toUpperCase() + words.slice(1);
}

/** Why `path` could never be written (a usage error, said before anything runs), or null. */
export function unwritable(path: string): string | null {
  const found = stat(path);
  if (found?.dir === true) return `--snapshot ${path} is a directory`;
  if (found !== undefined && !found.file) return null; // a device or a pipe: written in place
  let parent = dirname(path);
  while (stat(parent) === undefined && dirname(parent) !== parent) parent = dirname(parent);
  if (stat(parent)?.dir !== true) return `--snapshot ${path}: ${parent} is not a directory`;
  // The snapshot replaces the file through a new file beside it: that must be possible.
  const probe = join(parent, `.flowc-run-probe.${String(process.pid)}.tmp`);
  try {
    closeSync(openSync(probe, "wx"));
    unlinkSync(probe);
  } catch (error) {
    return `--snapshot ${path}: cannot write in ${parent}: ${osWhy(error)}`;
  }
  return null;
}

/** Whether `path` holds a snapshot to resume from (a regular file: a device is an output). */
export function resumable(path: string): boolean {
  return stat(path)?.file === true;
}

/** The snapshot in `path`; an Error saying why it cannot be read. */
export function readSnapshot(path: string): Record<string, unknown> {
  const data = parseJSON(readFileSync(path, "utf8"));
  if (!isDict(data)) throw new Error("a snapshot is a JSON object");
  return data;
}

/** Write `snapshot` to `path`: a regular file is replaced whole (a failed write leaves the old
 * one), anything else is written in place. Why it failed, or null. */
export function saveSnapshot(path: string, snapshot: unknown): string | null {
  const text = `${dumps(snapshot)}\n`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    const found = stat(path);
    if (found !== undefined && !found.file) {
      writeFileSync(path, text);
      return null;
    }
    const tmp = join(dirname(path), `.${basename(path)}.${String(process.pid)}.tmp`);
    try {
      writeFileSync(tmp, text);
      renameSync(tmp, path);
    } finally {
      if (stat(tmp) !== undefined) unlinkSync(tmp);
    }
  } catch (error) {
    return `cannot save the snapshot to ${path}: ${osWhy(error)}`;
  }
  return null;
}
