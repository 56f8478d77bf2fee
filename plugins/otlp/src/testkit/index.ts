import type { TelemetrySinkSubject } from "@assemblyline-agents/core/testkit";
import { createOtlpSink } from "../sink.js";
import { startOtlpJsonReceiver } from "./receiver.js";

export { startOtlpJsonReceiver, type OtlpJsonReceiver } from "./receiver.js";

/**
 * The telemetry-sink kit's subject: createOtlpSink against a local OTLP/HTTP
 * JSON receiver, one per test. `plugins verify` imports it through the
 * manifest's telemetrySinks entry.
 */
export async function otlpSinkKitSubject(): Promise<{ state: TelemetrySinkSubject; cleanup(): Promise<void> }> {
  const receiver = await startOtlpJsonReceiver();
  const sink = createOtlpSink({ endpoint: receiver.url, maxBatchSize: 512, scheduledDelayMs: 3_600_000 });
  return {
    state: {
      sink,
      delivered: async () => {
        if (receiver.failures.length > 0) throw new Error(`the receiver refused requests: ${receiver.failures.join("; ")}`);
        return receiver.spans;
      },
    },
    cleanup: async () => {
      await sink.shutdown();
      await receiver.close();
    },
  };
}
