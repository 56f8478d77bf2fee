import type { AgentHarness } from "@assemblyline-agents/core";

/**
 * The abort signal of the turn each run is in, in this process: the one its tool calls' `ctx.signal` is.
 * A child spawned in that turn is driven under it, so a parent that stops (cancelled, out of time, a tool
 * beside the spawn failed) stops its child. Read from the engine's context, where the turn hands it over:
 * a spawn reaches the runtime with its request and call only (RunServices.spawnSubagent).
 */
export class TurnSignals {
  private readonly signals = new Map<string, AbortSignal>();
  private readonly watched = new WeakMap<AgentHarness, AgentHarness>();

  /** The signal of `runId`'s turn under way here; none between turns. */
  of(runId: string): AbortSignal | undefined {
    return this.signals.get(runId);
  }

  /** `harness`, noting each turn's signal while the turn runs (one wrapper per engine, not per turn). */
  watch(harness: AgentHarness): AgentHarness {
    let watching = this.watched.get(harness);
    if (!watching) {
      const signals = this.signals;
      watching = {
        get name() {
          return harness.name;
        },
        async runTurn(input, ctx) {
          signals.set(ctx.runId, ctx.signal);
          try {
            return await harness.runTurn(input, ctx);
          } finally {
            if (signals.get(ctx.runId) === ctx.signal) signals.delete(ctx.runId);
          }
        },
      };
      this.watched.set(harness, watching);
    }
    return watching;
  }
}
