// Time as the Python runtime keeps it: integer milliseconds since the epoch, read from an
// injectable clock; written in snapshots and history as Python's `datetime.isoformat()`.

/** A clock: the current time in milliseconds since the epoch (an integer once read). */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** A clock that moves only when told to (tests, vectors). */
export class FakeClock {
  ms: number;

  constructor(startMs = 1735689600000) {
    this.ms = startMs;
  }

  readonly now: Clock = () => this.ms;

  advance(ms: number): number {
    if (ms < 0 || !Number.isFinite(ms)) throw new RangeError("a clock does not go backwards");
    this.ms += Math.round(ms);
    return this.ms;
  }
}

/** A clock's reading in whole milliseconds. */
export function readMs(clock: Clock): number {
  return Math.round(clock());
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** Epoch milliseconds as Python's `ms_to_datetime(ms).isoformat()` writes them. */
export function msToIso(ms: number): string {
  const d = new Date(ms);
  const date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
  const time = `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  const millis = d.getUTCMilliseconds();
  const fraction = millis === 0 ? "" : `.${pad(millis * 1000, 6)}`;
  return `${date}T${time}${fraction}+00:00`;
}

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?)?)?(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?$/;

/** Python's round(): half to even. */
function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

function offsetMs(zone: string | undefined): number {
  if (zone === undefined || zone === "Z") return 0;
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(/:/g, "");
  const h = Number(digits.slice(0, 2));
  const m = Number(digits.slice(2, 4) || "0");
  const s = Number(digits.slice(4, 6) || "0");
  return sign * ((h * 60 + m) * 60 + s) * 1000;
}

/** Epoch milliseconds from an ISO 8601 text (naive: UTC) or epoch seconds, as Python's
 * `to_ms` reads them; throws a TypeError for anything else. */
export function toMs(value: unknown): number {
  if (typeof value === "number" && Number.isFinite(value)) return roundHalfEven(value * 1000);
  if (typeof value !== "string") throw new TypeError(`not a time: ${JSON.stringify(value)}`);
  const m = ISO.exec(value);
  if (m === null) throw new TypeError(`Invalid isoformat string: '${value}'`);
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const base = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0));
  if (Number.isNaN(base)) throw new TypeError(`Invalid isoformat string: '${value}'`);
  const micros = frac === undefined ? 0 : Number(frac.padEnd(6, "0"));
  return base - offsetMs(zone) + roundHalfEven(micros / 1000);
}
