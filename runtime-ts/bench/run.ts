// The bench: events per second and bytes per instance, flowc's TypeScript runtime against
// XState v5 on twin machines (a flat flow, a statechart with parallel regions), printed with
// the ratios. Run by bench/run.sh, which compiles the flows and bundles this file:
//   node --expose-gc bench.mjs FLAT.json CHART.json
import { readFileSync } from "node:fs";
import { createActor } from "xstate";
import type { AnyStateMachine } from "xstate";
import { Machine } from "../src/index.js";
import { CHART_CYCLE, FLAT_CYCLE, chartMachine, flatMachine } from "./xstate.js";

type Cycle = readonly ({ type: string } & Record<string, unknown>)[];

interface Figures {
  eventsPerSecond: number;
  bytesPerInstance: number;
}

const EVENTS = 200_000;
const INSTANCES = 5_000;
/** Each speed is the best of this many runs (the machine may be busy with other work). */
const RUNS = 7;

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error("run node with --expose-gc");
  collect();
  collect();
}

/** Events per second over `EVENTS` events sent to `instances` instances in turn (fresh
 * instances, so that a history growing without end does not weigh on one runtime only). */
function rate(start: () => (e: Cycle[number]) => void, cycle: Cycle): number {
  const perInstance = cycle.length * 50;
  let sent = 0;
  const begin = process.hrtime.bigint();
  while (sent < EVENTS) {
    const send = start();
    for (let i = 0; i < perInstance; i++) send(cycle[i % cycle.length] as Cycle[number]);
    sent += perInstance;
  }
  const seconds = Number(process.hrtime.bigint() - begin) / 1e9;
  return sent / seconds;
}

type Starter = () => (e: Cycle[number]) => void;

/** The best rate of each runtime over `RUNS` rounds, the two taking turns in each round (so
 * that other work on the machine weighs on both alike). */
function bestRates(ours: Starter, theirs: Starter, cycle: Cycle): [number, number] {
  rate(ours, cycle); // warm up
  rate(theirs, cycle);
  let [a, b] = [0, 0];
  for (let i = 0; i < RUNS; i++) {
    a = Math.max(a, rate(ours, cycle));
    b = Math.max(b, rate(theirs, cycle));
  }
  return [a, b];
}

/** The heap each started instance holds, measured over `INSTANCES` of them. */
function footprint(start: () => unknown): number {
  const kept: unknown[] = new Array<unknown>(INSTANCES);
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < INSTANCES; i++) kept[i] = start();
  gc();
  const after = process.memoryUsage().heapUsed;
  if (kept.length !== INSTANCES) throw new Error("lost an instance");
  return Math.round((after - before) / INSTANCES);
}

function flowcStarter(machine: Machine): Starter {
  return () => {
    const instance = machine.start();
    if (!("send" in instance)) throw new Error("the bench flow did not start");
    return (e) => {
      const { type, ...payload } = e;
      const out = instance.send(type, Object.keys(payload).length > 0 ? payload : null);
      if (!out.ok) throw new Error(`flowc refused ${type}`);
    };
  };
}

function xstateStarter(machine: AnyStateMachine): Starter {
  return () => {
    const actor = createActor(machine).start();
    return (e) => {
      actor.send(e);
    };
  };
}

/** Both runtimes' figures on one pair of twins. */
function measure(ir: string, twin: AnyStateMachine, cycle: Cycle): [Figures, Figures] {
  const machine = Machine.fromJSON(ir);
  const [ours, theirs] = bestRates(flowcStarter(machine), xstateStarter(twin), cycle);
  return [
    { eventsPerSecond: ours, bytesPerInstance: footprint(() => machine.start()) },
    { eventsPerSecond: theirs, bytesPerInstance: footprint(() => createActor(twin).start()) },
  ];
}

/** Both runtimes end a few cycles in the same context: the twins do the same work. */
function sameWork(ir: string, machine: AnyStateMachine, cycle: Cycle): void {
  const instance = Machine.fromJSON(ir).start();
  const actor = createActor(machine).start();
  if (!("send" in instance)) throw new Error("the bench flow did not start");
  for (let i = 0; i < cycle.length * 3; i++) {
    const { type, ...payload } = cycle[i % cycle.length] as Cycle[number];
    instance.send(type, Object.keys(payload).length > 0 ? payload : null);
    actor.send(cycle[i % cycle.length]);
  }
  const ours = JSON.stringify(instance.context);
  const theirs = JSON.stringify((actor.getSnapshot() as { context: unknown }).context);
  if (ours !== theirs) throw new Error(`the twins differ: flowc ${ours}, xstate ${theirs}`);
}

function row(name: string, ours: Figures, theirs: Figures): string {
  const eps = (n: number): string => Math.round(n).toLocaleString("en-US").padStart(11);
  const bytes = (n: number): string => n.toLocaleString("en-US").padStart(8);
  const speed = (ours.eventsPerSecond / theirs.eventsPerSecond).toFixed(2);
  const size = (ours.bytesPerInstance / theirs.bytesPerInstance).toFixed(2);
  return [
    `${name.padEnd(9)} flowc ${eps(ours.eventsPerSecond)} ev/s ${bytes(ours.bytesPerInstance)} B/instance`,
    `${"".padEnd(9)} xstate ${eps(theirs.eventsPerSecond)} ev/s ${bytes(theirs.bytesPerInstance)} B/instance`,
    `${"".padEnd(9)} ratio (flowc / xstate): speed ${speed}x, memory ${size}x`,
  ].join("\n");
}

function main(argv: string[]): void {
  const [flat, chart] = argv;
  if (flat === undefined || chart === undefined) throw new Error("usage: bench.mjs FLAT.json CHART.json");
  console.log(`node ${process.version}, best of ${String(RUNS)} runs of ${String(EVENTS)} events, ${String(INSTANCES)} instances for memory`);
  const [flatIR, chartIR] = [readFileSync(flat, "utf8"), readFileSync(chart, "utf8")];
  sameWork(flatIR, flatMachine, FLAT_CYCLE);
  sameWork(chartIR, chartMachine, CHART_CYCLE);
  console.log(row("flat", ...measure(flatIR, flatMachine, FLAT_CYCLE)));
  console.log(row("parallel", ...measure(chartIR, chartMachine, CHART_CYCLE)));
}

main(process.argv.slice(2));
