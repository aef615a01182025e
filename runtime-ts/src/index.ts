// The package's public surface: see docs/typescript.md.
export { IR_VERSIONS, IRLoadError, loadFlow } from "./ir.js";
export type { FlowDef } from "./ir.js";
export { Machine } from "./machine.js";
export type { MachineOptions } from "./machine.js";
export { Instance, KEYS_KEPT, UnknownChild } from "./instance.js";
export { MAX_DELIVERIES } from "./children.js";
export { endInvoke } from "./childTree.js";
export type { StartOptions, StepOptions } from "./instance.js";
export { StepResult } from "./history.js";
export type { Effect, Entry } from "./history.js";
export type { Outcome, Rejection } from "./outcome.js";
export { FakeClock, systemClock, msToIso, toMs } from "./clock.js";
export type { Clock } from "./clock.js";
export { SnapshotError, SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_1, SNAPSHOT_FORMAT_3, SNAPSHOT_FORMAT_4 } from "./snapshot.js";
export type { Scheduled } from "./scheduled.js";
export type { RestoreOptions } from "./snapshot.js";
export { runVector, runFromSnapshot, snapshotAfter } from "./vectors.js";
export type { Vector, VectorFile } from "./vectors.js";
