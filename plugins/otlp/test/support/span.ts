import type { TelemetrySpan } from "@assemblyline-agents/core";

/** One finished span of a run, as the runtime hands it to a sink, under `resource`. */
export function finishedSpan(resource: Record<string, string> = { "service.name": "learning-agent", "service.version": "rev1" }): TelemetrySpan {
  return {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "00f067aa0ba902b7",
    name: "invoke_agent a",
    kind: "internal",
    startTimeMs: 1_764_000_000_000,
    endTimeMs: 1_764_000_000_005,
    status: { code: "ok" },
    attributes: {},
    resource,
  };
}
