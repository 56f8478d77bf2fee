import type { TelemetrySink } from "@assemblyline-agents/core";

/**
 * How long a command (run, approve, runs, skills, automations) waits at its exit
 * for instrumentation.ts's sink to send its spans: a collector that is down or
 * absent would otherwise hold every command for the sink's whole retry budget
 * (OTLP: 10 s a batch). What is not sent by then is dropped and reported.
 */
export const CLI_TELEMETRY_FLUSH_MS = 2_000;

/** `sink` with its exit flush bounded by `timeoutMs`; it gets the runtime's logger as it would unwrapped. */
export function exitBoundedSink(sink: TelemetrySink, timeoutMs = CLI_TELEMETRY_FLUSH_MS): TelemetrySink {
  return {
    export: (span) => sink.export(span),
    useLogger: (logger) => sink.useLogger?.(logger),
    flush: async (options) => {
      const bound = Math.min(options?.timeoutMs ?? timeoutMs, timeoutMs);
      let timer: NodeJS.Timeout | undefined;
      // A sink that ignores the bound is not waited for past it either (the timer must not hold the process itself).
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, bound + 250).unref()));
      try {
        await Promise.race([sink.flush?.({ timeoutMs: bound }), late]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
