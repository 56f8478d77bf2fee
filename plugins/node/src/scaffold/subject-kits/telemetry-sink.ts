import { NOT_IMPLEMENTED, subjectExport, type SubjectKitTemplate } from "../subject-kit-template.js";

export const telemetrySinkTemplate: SubjectKitTemplate = {
  kind: "telemetry-sink",
  contract: "telemetry@1",
  kit: "describeTelemetrySinkConformance",
  file: "sink",
  helper: (names) => `create${names.pascal}Sink`,
  manifest: (request, names) => ({
    provides: [],
    telemetrySinks: [{ name: request.id, export: `create${names.pascal}Sink`, contract: "telemetry@1", conformance: { module: "./testkit", export: subjectExport(names, "telemetry-sink") } }],
  }),
  source: (_request, names) => `import type { TelemetrySink, TelemetrySpan } from "@assemblyline-agents/core";

export interface ${names.pascal}SinkOptions {
  /** Where the backend takes spans. */
  endpoint?: string;
}

${NOT_IMPLEMENTED("sink")}
/**
 * The sink: export() queues a span without waiting on the network and never
 * changes it; flush() sends everything queued, each span exactly once, with
 * its ids, parent, times, status, attribute types and resource.
 */
export function create${names.pascal}Sink(options: ${names.pascal}SinkOptions = {}): TelemetrySink & { shutdown(): Promise<void> } {
  return {
    export(span: TelemetrySpan): void {
      throw notImplemented("export(" + span.name + ") to " + (options.endpoint ?? "the backend"));
    },
    async flush(): Promise<void> {
      throw notImplemented("flush()");
    },
    async shutdown(): Promise<void> {},
  };
}
`,
  testkit: (_request, names) => `import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { DeliveredSpan, TelemetrySinkSubject } from "@assemblyline-agents/core/testkit";
import { create${names.pascal}Sink } from "./sink.js";

/**
 * The telemetry-sink kit's subject: the sink against a local backend. This
 * backend takes POST /spans with a JSON array of spans in the kit's
 * DeliveredSpan shape; make it decode your backend's format instead.
 */
export async function ${subjectExport(names, "telemetry-sink")}(): Promise<{ state: TelemetrySinkSubject; cleanup(): Promise<void> }> {
  const spans: DeliveredSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/spans") return void res.writeHead(404).end();
      spans.push(...(JSON.parse(Buffer.concat(chunks).toString("utf8")) as DeliveredSpan[]));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const sink = create${names.pascal}Sink({ endpoint: "http://127.0.0.1:" + (server.address() as AddressInfo).port + "/spans" });
  return {
    state: { sink, delivered: async () => spans },
    cleanup: async () => {
      await sink.shutdown();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
`,
  usage: (request, names) => `// instrumentation.ts
import { defineInstrumentation } from "@assemblyline-agents/core";
import { create${names.pascal}Sink } from "${request.packageName}";

export default defineInstrumentation({ setup: () => create${names.pascal}Sink() });`,
  implement: (names) =>
    `Implement \`export\` and \`flush\` of \`create${names.pascal}Sink\` in \`src/sink.ts\` (queue in export, send in
   flush), and make the backend in \`src/testkit.ts\` decode what your backend receives.
   \`@assemblyline-agents/otlp\` is a complete example.`,
};
