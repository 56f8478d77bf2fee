/**
 * `plugins new --slot runtime|harness|channel|telemetry-sink`: packages whose
 * kit runs on a subject factory the package ships (`./testkit`), because the
 * kit needs a fake provider (a model server, a chat provider, a span backend)
 * or a host to boot. Each skeleton compiles, its stubs say which file to
 * write, and its test and `plugins verify` run the kit through `./testkit`.
 */

/** What the generator needs to know about the package. */
export interface SubjectKitRequest {
  packageName: string;
  id: string;
  kernelRange: string;
  coreRange: string;
}

export interface SubjectKitTemplate {
  kind: "runtime" | "harness" | "channel" | "telemetry-sink";
  contract: string;
  /** The @assemblyline-agents/core/testkit kit. */
  kit: string;
  /** The file the author implements, under src/, without extension. */
  file: string;
  /** The export a user calls (gateway.ts, modelHarnesses, channels/<name>.ts, instrumentation.ts). */
  helper(names: Names): string;
  /** The manifest entries: provides (runtime) or the kind's own list. */
  manifest(request: SubjectKitRequest, names: Names): Record<string, unknown>;
  source(request: SubjectKitRequest, names: Names): string;
  testkit(request: SubjectKitRequest, names: Names): string;
  /** How a user wires it, for the README. */
  usage(request: SubjectKitRequest, names: Names): string;
  /** What "implement it" means, for the README. */
  implement(names: Names): string;
}

export interface Names {
  pascal: string;
  camel: string;
}

const pascal = (id: string) => id.split("-").map((part) => part[0]!.toUpperCase() + part.slice(1)).join("");

export function subjectKitNames(id: string): Names {
  const upper = pascal(id);
  return { pascal: upper, camel: upper[0]!.toLowerCase() + upper.slice(1) };
}

const subjectExport = (names: Names, kind: string) => `${names.camel}${pascal(kind)}KitSubject`;

const NOT_IMPLEMENTED = (file: string) => `/** Replace with the real thing: until then every call says what is missing. */
function notImplemented(what: string): Error {
  return new Error(what + " is not implemented yet: write it in src/${file}.ts");
}
`;

const runtime: SubjectKitTemplate = {
  kind: "runtime",
  contract: "runtime@1",
  kit: "describeRuntimeConformance",
  file: "host",
  helper: (names) => `${names.camel}Runtime`,
  manifest: (request, names) => ({
    provides: [{ slot: "runtime", name: request.id, export: `${names.camel}Runtime`, contract: "runtime@1", conformance: { module: "./testkit", export: subjectExport(names, "runtime") } }],
  }),
  source: (_request, names) => `import type { AgentHarness } from "@assemblyline-agents/core";

export interface ${names.pascal}HostOptions {
  /** The agent folder to build and serve. */
  agentDir: string;
  /** The engine for every model spec; undefined: the agent's own routes. */
  harness?: AgentHarness;
  port?: number;
  host?: string;
}

/** A running host: its base URL and how to drain and stop it. */
export interface ${names.pascal}Host {
  url: string;
  shutdown(): Promise<void>;
}

${NOT_IMPLEMENTED("host")}
/**
 * Build the agent folder and serve it: /healthz, /readyz, the agent's channel
 * routes (a raw route answers with the run once it rests when asked ?wait=<s>),
 * and a shutdown that drains and closes the listener.
 */
export async function listen${names.pascal}Runtime(options: ${names.pascal}HostOptions): Promise<${names.pascal}Host> {
  throw notImplemented("listen${names.pascal}Runtime(" + options.agentDir + ")");
}
`,
  testkit: (_request, names) => `import type { RuntimeKitSubject } from "@assemblyline-agents/core/testkit";
import { listen${names.pascal}Runtime } from "./host.js";

/** The runtime kit's subject: one per test, booting this package's host on a free local port. */
export function ${subjectExport(names, "runtime")}(): { state: RuntimeKitSubject } {
  return { state: { start: ({ agentDir, harness }) => listen${names.pascal}Runtime({ agentDir, harness, port: 0, host: "127.0.0.1" }) } };
}
`,
  usage: (request, names) => `// gateway.ts
import { defineGateway } from "@assemblyline-agents/core";
import { ${names.camel}Runtime } from "${request.packageName}";

export default defineGateway({ runtime: ${names.camel}Runtime() });`,
  implement: (names) =>
    `Implement \`listen${names.pascal}Runtime\` in \`src/host.ts\`: build the agent folder (\`buildAgent\` and
   \`loadRuntimeBundle\` from \`@assemblyline-agents/runtime\`), serve \`/healthz\`, \`/readyz\` and the agent's
   channel routes, and stop cleanly in \`shutdown()\`. \`listenNodeRuntime\` from \`@assemblyline-agents/node\`
   is a complete example.`,
};

const harness: SubjectKitTemplate = {
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

const channel: SubjectKitTemplate = {
  kind: "channel",
  contract: "channel@1",
  kit: "describeChannelConformance",
  file: "channel",
  helper: (names) => `define${names.pascal}Channel`,
  manifest: (request, names) => ({
    provides: [],
    channels: [{ name: request.id, export: `define${names.pascal}Channel`, contract: "channel@1", conformance: { module: "./testkit", export: subjectExport(names, "channel") } }],
  }),
  source: (request, names) => `import type { ChannelAck, ChannelDelivery, ChannelModule, ChannelRequest, ChannelTurn } from "@assemblyline-agents/core";

export interface ${names.pascal}ChannelOptions {
  /** The secret the provider signs its webhooks with. */
  signingSecret?: string;
  /** The provider's API base URL, where replies go. */
  apiBaseUrl?: string;
}

${NOT_IMPLEMENTED("channel")}
/**
 * The channel: normalizeHttp verifies the provider's signature (a forged
 * request throws an error with status 401) and turns an event into a turn with
 * a stable conversationId and the provider's event id; deliver posts the reply
 * to the provider (throwing when it refuses, so the outbox retries).
 */
export function define${names.pascal}Channel(options: ${names.pascal}ChannelOptions = {}): ChannelModule {
  return {
    config: { transport: "http", route: "/${request.id}/events", methods: ["POST"] },
    async normalizeHttp(request: ChannelRequest): Promise<ChannelTurn | ChannelAck> {
      throw notImplemented("normalizeHttp(" + request.path + ")");
    },
    async deliver(delivery: ChannelDelivery): Promise<void> {
      throw notImplemented("deliver() to " + (options.apiBaseUrl ?? "the provider") + " for run " + delivery.runId);
    },
  };
}
`,
  testkit: (_request, names) => `import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChannelKitEvent, ChannelKitSubject } from "@assemblyline-agents/core/testkit";
import { define${names.pascal}Channel } from "./channel.js";

const SECRET = "kit-signing-secret";

/**
 * The channel kit's subject: the channel against a local fake of the
 * provider. This fake signs webhooks with HMAC-SHA256 (x-signature, hex),
 * takes replies at POST /messages ({ eventId, text }) and serves attachments
 * at /files/<id>; make it speak your provider's API instead.
 */
export async function ${subjectExport(names, "channel")}(): Promise<{ state: ChannelKitSubject; cleanup(): Promise<void> }> {
  const received: Array<{ eventId: string; text: string }> = [];
  const files = new Map<string, Uint8Array>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const file = /^\\/files\\/(.+)$/.exec(req.url ?? "");
      if (req.method === "GET" && file && files.has(file[1]!)) return void res.writeHead(200).end(files.get(file[1]!));
      if (req.method === "POST" && req.url === "/messages") {
        received.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as { eventId: string; text: string });
        return void res.writeHead(200, { "content-type": "application/json" }).end("{}");
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const apiBaseUrl = "http://127.0.0.1:" + (server.address() as AddressInfo).port;
  const request = (event: ChannelKitEvent, secret: string | undefined) => {
    if (event.attachment) files.set(event.attachment.id, event.attachment.bytes);
    const body = {
      id: event.id,
      conversation: event.conversationKey,
      text: event.text,
      ...(event.attachment ? { attachment: { id: event.attachment.id, filename: event.attachment.filename, contentType: event.attachment.contentType, url: apiBaseUrl + "/files/" + event.attachment.id } } : {}),
    };
    const rawBody = new TextEncoder().encode(JSON.stringify(body));
    const signature = secret === undefined ? undefined : createHmac("sha256", secret).update(rawBody).digest("hex");
    return { method: "POST", path: "/events", headers: signature ? { "x-signature": signature } : {}, body, rawBody };
  };
  return {
    state: {
      module: define${names.pascal}Channel({ signingSecret: SECRET, apiBaseUrl }),
      request: (event) => request(event, SECRET),
      forgeries: (event) => [
        { name: "signed with another secret", request: request(event, "not-the-secret") },
        { name: "unsigned", request: request(event, undefined) },
      ],
      received: (eventId) => received.filter((message) => message.eventId === eventId).map((message) => message.text),
    },
    cleanup: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
`,
  usage: (request, names) => `// channels/${request.id}.ts
import { define${names.pascal}Channel } from "${request.packageName}";

export default define${names.pascal}Channel({ signingSecret: process.env.${request.id.toUpperCase().replace(/-/g, "_")}_SIGNING_SECRET });`,
  implement: (names) =>
    `Implement \`normalizeHttp\` and \`deliver\` of \`define${names.pascal}Channel\` in \`src/channel.ts\` for your
   provider, and make the fake provider in \`src/testkit.ts\` sign and accept requests the way it does.
   \`@assemblyline-agents/discord\` is a complete example.`,
};

const telemetrySink: SubjectKitTemplate = {
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

/** The kinds scaffolded with a shipped kit subject, by `--slot` value. */
export const SUBJECT_KIT_TEMPLATES: Record<string, SubjectKitTemplate> = { runtime, harness, channel, "telemetry-sink": telemetrySink };

/** Every file of the new package, path -> text. */
export function subjectKitFiles(request: SubjectKitRequest, template: SubjectKitTemplate, shared: { tsconfig: string; gitignore: string }): Record<string, string> {
  const names = subjectKitNames(request.id);
  const subject = subjectExport(names, template.kind);
  const isRuntime = template.kind === "runtime";
  const packageJson = {
    name: request.packageName,
    version: "0.1.0",
    description: `A ${template.kind} for Assembly Line.`,
    type: "module",
    license: "MIT",
    engines: { node: ">=20.19" },
    main: "./dist/index.js",
    types: "./dist/index.d.ts",
    exports: {
      ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
      "./testkit": { types: "./dist/testkit.d.ts", default: "./dist/testkit.js" },
    },
    files: ["dist", "src"],
    scripts: {
      build: "tsc -p .",
      prepack: "tsc -p .",
      test: "vitest run",
      verify: `npx -p @assemblyline-agents/node@${request.kernelRange} assembly-line plugins verify .`,
    },
    peerDependencies: { "@assemblyline-agents/core": request.coreRange },
    devDependencies: {
      "@assemblyline-agents/core": request.coreRange,
      ...(isRuntime ? { "@assemblyline-agents/runtime": request.kernelRange } : {}),
      "@types/node": "^20.19.0",
      typescript: "~5.9.3",
      vitest: "^4.1.0",
    },
    publishConfig: { access: "public" },
    assemblyLine: { manifestVersion: 1, id: request.id, kernel: request.kernelRange, ...template.manifest(request, names), env: [] },
  };
  const helper = template.helper(names);
  const index = isRuntime
    ? `import { readFileSync } from "node:fs";
import { adapterDescriptor, definePlugin, type AdapterDescriptor } from "@assemblyline-agents/core";

export { listen${names.pascal}Runtime, type ${names.pascal}Host, type ${names.pascal}HostOptions } from "./host.js";

/** The manifest id (package.json assemblyLine.id); descriptors name it in \`plugin\`. */
const ID = "${request.id}";

// The loader checks plugin.version against package.json, so read it rather than repeat it.
const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

export interface ${names.pascal}RuntimeOptions {
  port?: number;
  host?: string;
}

/** \`runtime: ${helper}()\` in gateway.ts: this package's host serves the agent. */
export function ${helper}(options: ${names.pascal}RuntimeOptions = {}): AdapterDescriptor<"runtime", ${names.pascal}RuntimeOptions> {
  return adapterDescriptor("runtime", ID, options);
}

/** The runtime slot has no methods to call: it records which host serves the agent, with its options. */
export const plugin = definePlugin({
  name: ID,
  version,
  apply(kernel) {
    kernel.hooks.slot.for("runtime").tapPromise({ name: ID }, async (descriptor) => (descriptor.plugin === ID ? { name: ID, options: descriptor.options } : undefined));
  },
});
`
    : `export * from "./${template.file}.js";\n`;
  const test = `import { ${template.kit} } from "@assemblyline-agents/core/testkit";
import { ${subject} } from "../src/testkit.js";

${template.kit}("${helper}", ${subject});
`;
  const readme = `# ${request.packageName}

A ${template.kind} for [Assembly Line](https://www.npmjs.com/package/@assemblyline-agents/node)
(plugin id \`${request.id}\`, contract \`${template.contract}\`).

\`\`\`ts
${template.usage(request, names)}
\`\`\`

## Write it

1. \`npm install\`
2. ${template.implement(names)}
3. \`npm run build && npm test\`: the \`${template.kit}\` conformance kit, on the subject
   \`${subject}\` in \`src/testkit.ts\` (shipped as \`${request.packageName}/testkit\`).
4. \`npm run verify\` (\`npx -p @assemblyline-agents/node assembly-line plugins verify .\`):
   the checks a host runs when it loads the package, then the same kit.
5. \`npm publish\`, then list it in the registry with a pull request adding it to
   \`registry/index.json\` (see the Assembly Line docs, "Listing a plugin").
`;
  return {
    "package.json": `${JSON.stringify(packageJson, null, 2)}\n`,
    "tsconfig.json": shared.tsconfig,
    ".gitignore": shared.gitignore,
    "src/index.ts": index,
    [`src/${template.file}.ts`]: template.source(request, names),
    "src/testkit.ts": template.testkit(request, names),
    "test/conformance.test.ts": test,
    "README.md": readme,
  };
}
