// What an app using XState for the bench's machines bundles: bench/run.sh measures its size
// (minified + gzipped) beside the flowc runtime's.
export { assign, createActor, createMachine } from "xstate";
