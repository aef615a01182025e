// The XState v5 twins of bench/flat.flow and bench/chart.flow: the same states, guards and
// context updates, so that both runtimes do the same work per event.
import { assign, createMachine } from "xstate";

export const flatMachine = createMachine({
  id: "bench_flat",
  types: {} as {
    context: { total: number; orders: number };
    events: { type: "submit"; amount: number } | { type: "approve" } | { type: "ship" } | { type: "reset" };
  },
  context: { total: 0, orders: 0 },
  initial: "draft",
  states: {
    draft: {
      on: {
        submit: {
          guard: ({ event }) => event.amount > 0,
          target: "review",
          actions: assign({ total: ({ context, event }) => context.total + event.amount }),
        },
      },
    },
    review: {
      on: {
        approve: { target: "approved", actions: assign({ orders: ({ context }) => context.orders + 1 }) },
        reset: { target: "draft" },
      },
    },
    approved: { on: { ship: { target: "shipped" } } },
    shipped: { on: { reset: { target: "draft" } } },
  },
});

export const chartMachine = createMachine({
  id: "bench_chart",
  types: {} as {
    context: { volume: number; ticks: number };
    events: { type: "play" } | { type: "pause" } | { type: "louder" } | { type: "quieter" } | { type: "tick" };
  },
  context: { volume: 5, ticks: 0 },
  type: "parallel",
  states: {
    playback: {
      initial: "paused",
      states: {
        paused: { on: { play: { target: "playing" } } },
        playing: {
          initial: "buffering",
          states: {
            buffering: { on: { tick: { target: "streaming" } } },
            streaming: {
              // `-> self` in flowc is internal (nothing exited or entered): a targetless one here.
              on: { tick: { actions: assign({ ticks: ({ context }) => context.ticks + 1 }) } },
            },
          },
          on: { pause: { target: "paused" } },
        },
      },
    },
    sound: {
      initial: "level",
      states: {
        level: {
          on: {
            louder: {
              guard: ({ context }) => context.volume < 10,
              actions: assign({ volume: ({ context }) => context.volume + 1 }),
            },
            quieter: {
              guard: ({ context }) => context.volume > 0,
              actions: assign({ volume: ({ context }) => context.volume - 1 }),
            },
          },
        },
      },
    },
  },
});

/** One cycle of events for each machine (the same for both runtimes). */
export const FLAT_CYCLE = [
  { type: "submit", amount: 5 },
  { type: "approve" },
  { type: "ship" },
  { type: "reset" },
] as const;

export const CHART_CYCLE = [
  { type: "play" },
  { type: "tick" },
  { type: "tick" },
  { type: "louder" },
  { type: "quieter" },
  { type: "pause" },
] as const;
