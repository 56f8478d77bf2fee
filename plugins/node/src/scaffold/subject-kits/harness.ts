import { NOT_IMPLEMENTED, subjectExport, type SubjectKitTemplate } from "../subject-kit-template.js";

export const harnessTemplate: SubjectKitTemplate = {
  kind: "harness",
  contract: "harness@1",
  kit: "describeHarnessConformance",
  file: "harness",
  helper: (names) => `${names.camel}AgentHarness`,
  manifest: (request, names) => ({
    provides: [],
    harnesses: [{ name: request.id, export: `${names.camel}AgentHarness`, contract: "harness@1", conformance: { module: "./testkit", export: subjectExport(names, "harness") } }],
  }),
  source: (request, names) => `import type { AgentHarness, HarnessContext, HarnessTurnInput, HarnessTurnResult } from "@assemblyline-agents/core";

export interface ${names.pascal}HarnessOptions {
  /** The provider's API base URL. */
  baseUrl?: string;
  apiKey?: string;
}

${NOT_IMPLEMENTED("harness")}
/**
 * The engine: ask the model (journal each call with ctx.modelCall, stream text
 * with ctx.textDelta), run its tool calls through ctx.callTool, return the
 * answer, or a JSON continuation when a call pauses; resume from it; stop when
 * ctx.signal aborts; refuse a continuation another engine made.
 */
export function ${names.camel}AgentHarness(options: ${names.pascal}HarnessOptions = {}): AgentHarness {
  return {
    name: "${request.id}",
    async runTurn(input: HarnessTurnInput, _ctx: HarnessContext): Promise<HarnessTurnResult> {
      throw notImplemented("runTurn(" + input.modelSpec + ") against " + (options.baseUrl ?? "the provider"));
    },
  };
}
`,
  testkit: (request, names) => `import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { HarnessKitReply, HarnessKitSubject } from "@assemblyline-agents/core/testkit";
import { ${names.camel}AgentHarness } from "./harness.js";

/**
 * The harness kit's subject: the engine against a local model server the kit
 * scripts. This server answers every POST with the next reply as one JSON
 * object; make it speak your provider's wire protocol (its request path, its
 * streamed events) byte for byte, so the kit tests the engine's real client.
 */
export async function ${subjectExport(names, "harness")}(): Promise<{ state: HarnessKitSubject; cleanup(): Promise<void> }> {
  const queue: HarnessKitReply[] = [];
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      requests.push(Buffer.concat(chunks).toString("utf8"));
      const reply = queue.shift();
      if (!reply) return void res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: "no scripted reply left" }));
      if ("hang" in reply) return;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = "http://127.0.0.1:" + (server.address() as AddressInfo).port;
  return {
    state: {
      harness: ${names.camel}AgentHarness({ baseUrl, apiKey: "kit-key" }),
      modelSpec: "${request.id}/kit-model",
      reply: (...replies) => void queue.push(...replies),
      requests: () => requests,
    },
    cleanup: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
`,
  usage: (request, names) => `// a host picks engines per model spec: "${request.id}/<model>" specs run on this one
import { listenNodeRuntime } from "@assemblyline-agents/node";
import { ${names.camel}AgentHarness } from "${request.packageName}";

await listenNodeRuntime({ ...bundle, modelHarnesses: { "${request.id}": ${names.camel}AgentHarness() } });`,
  implement: (names) =>
    `Implement \`runTurn\` of \`${names.camel}AgentHarness\` in \`src/harness.ts\` against your provider's API, and make
   the server in \`src/testkit.ts\` speak that API's wire protocol. \`@assemblyline-agents/pi\` is a complete
   example (and its tests' protocol servers).`,
};
