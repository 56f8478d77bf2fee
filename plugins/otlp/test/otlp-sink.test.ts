import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TelemetrySpan } from "@assemblyline-agents/core";
import { describeTelemetrySinkConformance, type DeliveredSpan } from "@assemblyline-agents/core/testkit";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { listenNodeRuntime } from "@assemblyline-agents/node";
import { createOtlpSink, createOtlpSinkFromEnv, parseOtlpHeaders } from "@assemblyline-agents/otlp";
import { startOtlpReceiver } from "./support/otlp-receiver.js";

const here = dirname(fileURLToPath(import.meta.url));
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(options?: Parameters<typeof startOtlpReceiver>[0]) {
  const started = await startOtlpReceiver(options);
  cleanups.push(started.close);
  return started;
}

/** An agent folder inside the package, so `@assemblyline-agents/otlp` resolves as it would in a project. */
function agentFolder(files: Record<string, string>): string {
  mkdirSync(join(here, ".agents"), { recursive: true });
  const dir = mkdtempSync(join(here, ".agents", "agent-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

const SECRET = "hunter2-secret-value";
const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learning-agent", model: "openai/gpt-5.4-mini", instructions: "Help.", defaultTools: ["lookup"] });
`;
const TOOL = `import { defineTool } from "@assemblyline-agents/core";
export default defineTool({
  description: "Look a word up.",
  inputSchema: { type: "object", properties: { word: { type: "string" }, password: { type: "string" } }, required: ["word"] },
  async execute(input) { return { meaning: "a greeting: " + input.word }; },
});
`;
/** The spec's instrumentation.ts, word for word. */
const SPEC_INSTRUMENTATION = `import { defineInstrumentation } from "@assemblyline-agents/core";
import { createOtlpSinkFromEnv } from "@assemblyline-agents/otlp";

export default defineInstrumentation({
  serviceName: "learning-agent",
  captureContent: "usage", // "usage" (default) | "content" | "full" | "off"
  setup: ({ env }) => createOtlpSinkFromEnv(env)
});
`;
const turns = [{ toolCalls: [{ name: "lookup", input: { word: "hello", password: SECRET }, id: "call_lookup" }] }, { text: "It means hi." }];

function span(index: number, extra: Partial<TelemetrySpan> = {}): TelemetrySpan {
  return {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: index.toString(16).padStart(16, "0"),
    parentSpanId: "b7ad6b7169203331",
    name: `execute_tool t${index}`,
    kind: "internal",
    startTimeMs: 1_764_000_000_000 + index,
    endTimeMs: 1_764_000_000_005 + index,
    status: { code: "ok" },
    attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": `t${index}`, "gen_ai.usage.input_tokens": 12, "assembly_line.usage.cost_usd": 0.25, flag: true, list: ["a", "b"] },
    resource: { "service.name": "svc" },
    ...extra,
  };
}

describe("the spec's instrumentation.ts exporting to an OTLP/HTTP receiver", () => {
  it("delivers a scripted run as one trace: invoke_agent over chat, execute_tool and step spans, GenAI attributes, no bodies", async () => {
    const otlp = await receiver();
    const dir = agentFolder({ "agent.ts": AGENT, "tools/lookup.ts": TOOL, "instrumentation.ts": SPEC_INSTRUMENTATION });
    const { artifactRoot } = await buildAgent(dir);
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20bGY6c2VjcmV0,x-tenant=acme" };
    const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot, { env })), state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns }), logger: noopLogger() });
    const result = await runtime.run({ message: `define hello, my password is ${SECRET}`, conversationId: "c-42" });
    expect(result.status).toBe("completed");
    await runtime.close();

    expect(otlp.failures).toEqual([]);
    expect(otlp.requests.length).toBeGreaterThan(0);
    for (const request of otlp.requests) {
      expect(request.path).toBe("/v1/traces");
      expect(request.headers.authorization).toBe("Basic bGY6c2VjcmV0");
      expect(request.headers["x-tenant"]).toBe("acme");
    }
    const spans = otlp.spans();
    const root = spans.find((item) => item.attributes["gen_ai.operation.name"] === "invoke_agent")!;
    expect(root).toMatchObject({ name: "invoke_agent learning-agent", parentSpanId: "", kind: 1, status: { code: 1 } });
    expect(root.resource["service.name"]).toBe("learning-agent");
    expect(root.scope.name).toBe("@assemblyline-agents/otlp");
    expect(root.attributes).toMatchObject({ "assembly_line.run.id": result.runId, "gen_ai.conversation.id": "c-42", "gen_ai.request.model": "gpt-5.4-mini", "gen_ai.provider.name": "openai" });
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    const children = spans.filter((item) => item !== root);
    expect(children.map((item) => item.name).sort()).toEqual(["chat gpt-5.4-mini", "chat gpt-5.4-mini", "execute_tool lookup", "step harness:model:0", "step harness:model:1"]);
    for (const child of children) {
      expect(child.traceId).toBe(root.traceId);
      expect(child.parentSpanId).toBe(root.spanId);
      expect(BigInt(child.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(root.startTimeUnixNano));
      expect(BigInt(child.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(root.endTimeUnixNano));
      expect(BigInt(child.startTimeUnixNano)).toBeLessThanOrEqual(BigInt(child.endTimeUnixNano));
    }
    expect(children.find((item) => item.name.startsWith("chat"))).toMatchObject({ kind: 3, attributes: { "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai" } });
    expect(children.find((item) => item.name === "execute_tool lookup")!.attributes).toMatchObject({ "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_lookup", "assembly_line.tool.outcome": "completed" });
    const wire = JSON.stringify(spans);
    expect(wire).not.toContain(SECRET);
    expect(wire).not.toContain("It means hi.");
    expect(wire).not.toContain("gen_ai.tool.call.arguments");
  });

  it("is flushed by the Node host's shutdown (spans held by the batch delay reach the receiver)", async () => {
    const otlp = await receiver();
    const dir = agentFolder({
      "agent.ts": AGENT,
      "tools/lookup.ts": TOOL,
      "instrumentation.ts": SPEC_INSTRUMENTATION.replace("createOtlpSinkFromEnv(env)", "createOtlpSinkFromEnv(env, { scheduledDelayMs: 3_600_000 })"),
    });
    const { artifactRoot } = await buildAgent(dir);
    const bundle = await loadRuntimeBundle(artifactRoot, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } });
    const host = await listenNodeRuntime({ ...bundle, port: 0, host: "127.0.0.1", devMode: true, agentHarness: scriptedHarness({ turns }), logger: noopLogger(), env: {} });
    cleanups.push(() => host.shutdown());
    expect((await host.runtime.run({ message: "define hello" })).status).toBe("completed");
    expect(otlp.spans()).toEqual([]);
    await host.shutdown();
    expect(otlp.failures).toEqual([]);
    expect(otlp.spans().map((item) => item.name)).toContain("invoke_agent learning-agent");
  });
});

describe("createOtlpSink", () => {
  it("sends full batches at once and the rest on flush, every field decodable by the OTLP proto", async () => {
    const otlp = await receiver();
    const sink = createOtlpSink({ endpoint: otlp.url, maxBatchSize: 4, scheduledDelayMs: 3_600_000 });
    for (let index = 1; index <= 10; index += 1) sink.export(span(index, index === 3 ? { status: { code: "error", message: "boom" }, kind: "client" } : {}));
    await sink.flush();
    expect(otlp.failures).toEqual([]);
    expect(otlp.requests.map((request) => request.spans.length)).toEqual([4, 4, 2]);
    const third = otlp.spans()[2]!;
    expect(third).toMatchObject({ spanId: "0000000000000003", parentSpanId: "b7ad6b7169203331", kind: 3, status: { code: 2, message: "boom" }, startTimeUnixNano: "1764000000003000000", endTimeUnixNano: "1764000000008000000" });
    expect(third.attributes).toEqual({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t3", "gen_ai.usage.input_tokens": 12, "assembly_line.usage.cost_usd": 0.25, flag: true, list: ["a", "b"] });
    expect(sink.stats()).toEqual({ exported: 10, dropped: 0, queued: 0 });
  });

  it("holds at most maxQueueSize spans and counts and reports what it drops", async () => {
    const otlp = await receiver();
    const warnings: string[] = [];
    const counted: number[] = [];
    const sink = createOtlpSink({ endpoint: otlp.url, maxBatchSize: 5, maxQueueSize: 5, scheduledDelayMs: 3_600_000, onWarning: (message, fields) => void (warnings.push(message), counted.push(fields.dropped as number)) });
    // The first five leave as a batch; while it is on its way the queue takes five more and drops the rest.
    for (let index = 1; index <= 13; index += 1) sink.export(span(index));
    expect(sink.stats()).toEqual({ exported: 0, dropped: 3, queued: 5 });
    await sink.flush();
    expect(otlp.spans().map((item) => item.spanId)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((index) => index.toString(16).padStart(16, "0")));
    expect(warnings[0]).toMatch(/dropped 1 span\(s\): the queue is full \(maxQueueSize 5\)/);
    // One warning for the three dropped spans, and one in sum once the queue takes spans again.
    expect(warnings).toHaveLength(1);
    sink.export(span(14));
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/dropped 2 more span\(s\) while its queue was full \(3 in all\); it has room again/);
    expect(sink.stats()).toEqual({ exported: 10, dropped: 3, queued: 1 });
    // Each warning's dropped field is the count its message gives, and they add up to stats().dropped.
    expect(counted).toEqual([1, 2]);
    expect(warnings.map((message) => Number(/dropped (\d+)/.exec(message)![1]))).toEqual(counted);
  });

  it("refuses a maxBatchSize larger than maxQueueSize, naming both: the batch could never fill and a healthy backend would lose spans", () => {
    const larger = () => createOtlpSink({ endpoint: "http://c:4318", maxBatchSize: 100, maxQueueSize: 10 });
    expect(larger).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
    expect(larger).toThrow(/createOtlpSink: maxBatchSize 100 is larger than maxQueueSize 10;/);
    // The default queue (2048) counts too, in createOtlpSinkFromEnv's overrides as well.
    expect(() => createOtlpSinkFromEnv({}, { maxBatchSize: 4096 })).toThrow(/maxBatchSize 4096 is larger than maxQueueSize 2048 \(the default\)/);
    expect(() => createOtlpSink({ endpoint: "http://c:4318", maxQueueSize: 100 })).toThrow(/maxBatchSize 512 \(the default\) is larger than maxQueueSize 100/);
    expect(createOtlpSink({ endpoint: "http://c:4318", maxBatchSize: 10, maxQueueSize: 10 }).stats()).toEqual({ exported: 0, dropped: 0, queued: 0 });
  });

  it("retries 503 and 429 (honouring Retry-After) and delivers the batch once", async () => {
    const otlp = await receiver({ responses: [{ status: 503 }, { status: 429, headers: { "retry-after": "0" } }, { status: 502 }] });
    const sink = createOtlpSink({ endpoint: otlp.url, initialBackoffMs: 1, maxBackoffMs: 5, scheduledDelayMs: 3_600_000 });
    sink.export(span(1));
    await sink.flush();
    expect(otlp.attempts()).toBe(4);
    expect(otlp.requests).toHaveLength(1);
    expect(sink.stats()).toEqual({ exported: 1, dropped: 0, queued: 0 });
  });

  it("drops a batch the backend refuses (400) without retrying, and one that runs out of attempts", async () => {
    const otlp = await receiver({ responses: [{ status: 400, body: '{"message":"bad"}' }, { status: 503 }, { status: 503 }] });
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: otlp.url, maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 2, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1));
    await sink.flush();
    expect(otlp.attempts()).toBe(1);
    sink.export(span(2));
    await sink.flush();
    expect(otlp.attempts()).toBe(3);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 2, queued: 0 });
    expect(warnings).toEqual([expect.stringContaining("refused the batch (HTTP 400)"), expect.stringContaining("export failed 2 times (last: HTTP 503)")]);
  });

  it("sends a batch a backend refuses as too large (413) again in halves, and drops alone a span it still refuses", async () => {
    // The batch of three, then its first half, then that half's first span are refused; the rest is taken.
    const otlp = await receiver({ responses: [{ status: 413 }, { status: 413 }, { status: 413 }] });
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: otlp.url, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    for (const index of [1, 2, 3]) sink.export(span(index));
    await sink.flush();
    expect(otlp.requests.map((request) => request.spans.map((item) => item.name))).toEqual([["execute_tool t2"], ["execute_tool t3"]]);
    expect(sink.stats()).toEqual({ exported: 2, dropped: 1, queued: 0 });
    expect(warnings).toEqual([expect.stringContaining('refused span "execute_tool t1" as too large (HTTP 413)')]);
  });

  it("sends a batch of large spans in requests of at most 4 MiB", async () => {
    const otlp = await receiver();
    const sink = createOtlpSink({ endpoint: otlp.url, scheduledDelayMs: 3_600_000 });
    // Five spans of about 1 MiB each, as captureContent "full" makes them for long tool results.
    for (const index of [1, 2, 3, 4, 5]) sink.export(span(index, { attributes: { "gen_ai.tool.call.result": "r".repeat(1024 * 1024) } }));
    await sink.flush();
    expect(otlp.failures).toEqual([]);
    expect(otlp.requests.map((request) => request.spans.length)).toEqual([3, 2]);
    expect(sink.stats()).toEqual({ exported: 5, dropped: 0, queued: 0 });
  });

  it("does not retry a 500, 501 or 408: OTLP/HTTP retries only 429, 502, 503 and 504", async () => {
    const otlp = await receiver({ responses: [{ status: 500 }, { status: 501 }, { status: 408 }] });
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: otlp.url, initialBackoffMs: 1, maxBackoffMs: 2, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    for (const index of [1, 2, 3]) {
      sink.export(span(index));
      await sink.flush();
    }
    expect(otlp.attempts()).toBe(3);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 3, queued: 0 });
    expect(warnings).toEqual(["HTTP 500", "HTTP 501", "HTTP 408"].map((status) => expect.stringContaining(`refused the batch (${status})`)));
  });

  it("drops at once, without retrying, a request fetch refuses to send, and does not repeat what fetch quoted", async () => {
    // What fetch does with a header it cannot carry; setup refuses such headers, so only fetch itself can say this.
    const refusal = vi.spyOn(globalThis, "fetch").mockRejectedValue(new TypeError('Headers.append: "Bearer sk-live-quoted" is an invalid header value.'));
    cleanups.push(() => refusal.mockRestore());
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: "http://collector.invalid:4318", initialBackoffMs: 1, maxBackoffMs: 2, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1));
    await sink.flush();
    expect(refusal).toHaveBeenCalledTimes(1);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
    expect(warnings).toEqual([expect.stringContaining("fetch refused to send the request")]);
    expect(warnings.join()).not.toContain("sk-live");
  });

  it("says why a network error failed, not just fetch's \"fetch failed\"", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 2, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1));
    await sink.flush();
    expect(warnings).toEqual([expect.stringMatching(/export failed 2 times \(last: fetch failed: .*ECONNREFUSED/)]);
  });

  it("gives up at a bounded flush's time, dropping what is unsent, with no retry wait left behind", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const warnings: string[] = [];
    // Backoff of a minute: an unbounded flush would wait it out (and the test time out).
    const sink = createOtlpSink({ endpoint: `http://127.0.0.1:${port}`, initialBackoffMs: 60_000, maxBackoffMs: 60_000, timeoutMs: 600_000, scheduledDelayMs: 3_600_000, maxBatchSize: 2, onWarning: (message) => void warnings.push(message) });
    for (const index of [1, 2, 3, 4, 5]) sink.export(span(index));
    await sink.flush({ timeoutMs: 200 });
    expect(sink.stats()).toEqual({ exported: 0, dropped: 5, queued: 0 });
    expect(warnings).toEqual([expect.stringMatching(/dropped 2 span\(s\): the flush ran out of time after 1 failed attempt/), expect.stringMatching(/dropped 3 span\(s\): the flush ran out of its 200 ms/)]);
  });

  it("ends at a bounded flush's time a request that started before the flush, against a collector that never answers", async () => {
    let received = 0;
    const silent = createServer(() => void (received += 1));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 10_000, scheduledDelayMs: 0, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1));
    await vi.waitFor(() => expect(received).toBe(1));
    const started = Date.now();
    await sink.flush({ timeoutMs: 300 });
    // The collector holds the request for the whole timeoutMs (10 s).
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
    expect(warnings).toEqual([expect.stringContaining("the flush ran out of time while it was being sent")]);
  });

  it("ends at a bounded flush's time a retry wait that started before the flush (Retry-After 8 s)", async () => {
    const otlp = await receiver({ responses: [{ status: 503, headers: { "retry-after": "8" } }] });
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: otlp.url, timeoutMs: 10_000, scheduledDelayMs: 0, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1));
    await vi.waitFor(() => expect(otlp.attempts()).toBe(1));
    const started = Date.now();
    await sink.flush({ timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(otlp.attempts()).toBe(1);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
  });

  it("keeps each overlapping bounded flush to its own deadline: a shorter one started second returns at its time, not the first one's", async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    const sink = createOtlpSink({ endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 60_000, scheduledDelayMs: 3_600_000, onWarning: () => {} });
    sink.export(span(1));
    const started = Date.now();
    const long = sink.flush({ timeoutMs: 8_000 });
    const short = sink.flush({ timeoutMs: 300 });
    await short;
    expect(Date.now() - started).toBeLessThan(3_000);
    await long;
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
  });

  it("sends spans exported after a bounded flush's deadline as usual: the deadline ends only what started before it", async () => {
    const delivered: string[] = [];
    let first = true;
    // Holds the first request unanswered, as a collector that hangs for a while; answers the rest.
    const slowThenFine = createServer((req, res) => {
      if (first) return void (first = false);
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        delivered.push(Buffer.concat(chunks).toString("utf8"));
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => slowThenFine.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (slowThenFine.closeAllConnections(), slowThenFine.close(() => resolve()))));
    const sink = createOtlpSink({ endpoint: `http://127.0.0.1:${(slowThenFine.address() as AddressInfo).port}`, timeoutMs: 10_000, scheduledDelayMs: 3_600_000, onWarning: () => {} });
    sink.export(span(1));
    await sink.flush({ timeoutMs: 300 });
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
    sink.export(span(2));
    await sink.flush({ timeoutMs: 5_000 });
    expect(sink.stats()).toEqual({ exported: 1, dropped: 1, queued: 0 });
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toContain(span(2).spanId);
  });

  it("lets the process exit soon after a bounded flush, with a request to a silent collector in flight when it began", async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    const script = `
      const { createOtlpSink } = await import(${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)});
      const sink = createOtlpSink({ endpoint: process.argv[1], timeoutMs: 10000, scheduledDelayMs: 0, onWarning: () => {} });
      const t = Date.now();
      sink.export({ traceId: "1".repeat(32), spanId: "2".repeat(16), name: "s", kind: "internal", startTimeMs: t, endTimeMs: t, status: { code: "ok" }, attributes: {}, resource: {} });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sink.flush({ timeoutMs: 300 });
    `;
    const started = Date.now();
    const child = spawn(process.execPath, ["--input-type=module", "-e", script, `http://127.0.0.1:${(silent.address() as AddressInfo).port}`], { stdio: "inherit" });
    cleanups.push(() => void child.kill());
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(0);
    // The request would hold it 10 s.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("reports its warnings through the runtime's logger once a runtime uses it, not as raw lines on stderr", async () => {
    const otlp = await receiver({ responses: [{ status: 400 }] });
    const dir = agentFolder({ "agent.ts": AGENT, "tools/lookup.ts": TOOL });
    const { artifactRoot } = await buildAgent(dir);
    const logged: Array<{ fields: Record<string, unknown>; msg?: string }> = [];
    const keep = (fields: Record<string, unknown>, msg?: string) => void logged.push({ fields, msg });
    const stderr = vi.spyOn(process.stderr, "write");
    cleanups.push(() => stderr.mockRestore());
    const sink = createOtlpSink({ endpoint: otlp.url, scheduledDelayMs: 3_600_000 });
    const runtime = new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), agentHarness: scriptedHarness({ turns }), telemetry: sink, logger: { debug: keep, info: keep, warn: keep, error: keep } });
    await runtime.run({ message: "what does hello mean?" });
    await runtime.close();
    expect(logged.filter((line) => line.fields.event === "telemetry.spans_dropped")).toEqual([
      { fields: expect.objectContaining({ event: "telemetry.spans_dropped", status: 400 }), msg: expect.stringContaining("the backend refused the batch (HTTP 400)") },
    ]);
    expect(stderr.mock.calls.map(([text]) => String(text)).join("")).not.toContain("telemetry.spans_dropped");
  });

  it("sends numbers a collector decodes (NaN, infinities, integers past 2^53) and drops alone a span it would refuse", async () => {
    const otlp = await receiver();
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: otlp.url, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1, { attributes: { "assembly_line.usage.cost_usd": Number.NaN, big: 1e21, up: Infinity, down: -Infinity, "gen_ai.usage.input_tokens": -3 } }));
    sink.export(span(2, { endTimeMs: Number.NaN }));
    sink.export(span(3, { spanId: "not-hex-at-all!!" }));
    sink.export(span(4));
    await sink.flush();
    expect(otlp.failures).toEqual([]);
    expect(otlp.spans().map((item) => item.spanId)).toEqual(["0000000000000001", "0000000000000004"]);
    expect(otlp.spans()[0]!.attributes).toEqual({ "assembly_line.usage.cost_usd": Number.NaN, big: 1e21, up: Infinity, down: -Infinity, "gen_ai.usage.input_tokens": -3 });
    expect(sink.stats()).toEqual({ exported: 2, dropped: 2, queued: 0 });
    expect(warnings).toEqual([expect.stringMatching(/endTimeMs NaN is not a time/), expect.stringMatching(/spanId "not-hex-at-all!!" is not 16 lowercase hex/)]);
  });

  it("gives up on a batch within timeoutMs, every try included, so a silent backend cannot hold a flush (and the host's shutdown)", async () => {
    let attempts = 0;
    const silent = createServer(() => void (attempts += 1));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    const warnings: string[] = [];
    const sink = createOtlpSink({
      endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      timeoutMs: 400,
      maxAttempts: 5,
      initialBackoffMs: 50,
      scheduledDelayMs: 3_600_000,
      onWarning: (message) => void warnings.push(message),
    });
    sink.export(span(1));
    const started = Date.now();
    await sink.flush();
    // Five tries of 400 ms each, plus backoff, would hold it more than two seconds.
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(attempts).toBe(1);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
    expect(warnings).toEqual([expect.stringContaining("within timeoutMs 400")]);
  });

  it("still gives up on a silent collector at timeoutMs when a garbage collection runs while the request waits", async () => {
    // On Node 20 a timeout signal held only by AbortSignal.any is collected here, and the request then waits for ever.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    let attempts = 0;
    const silent = createServer(() => void (attempts += 1));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    const warnings: string[] = [];
    const sink = createOtlpSink({ endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 300, scheduledDelayMs: 3_600_000, onWarning: (message) => void warnings.push(message) });
    sink.export(span(1));
    const started = Date.now();
    const flushed = sink.flush().then(() => Date.now() - started);
    await vi.waitFor(() => expect(attempts).toBe(1));
    gc();
    const took = await Promise.race([flushed, new Promise<string>((resolve) => setTimeout(() => resolve("still flushing after 3 s"), 3_000).unref())]);
    expect(took).toBeLessThan(1_500);
    expect(sink.stats()).toEqual({ exported: 0, dropped: 1, queued: 0 });
    expect(warnings).toEqual([expect.stringMatching(/within timeoutMs 300 \(last: no answer within \d+ ms\)/)]);
  });

  it("drops a batch at once when the backend's Retry-After is past its timeoutMs, instead of sleeping through it", async () => {
    const otlp = await receiver({ responses: [{ status: 429, headers: { "retry-after": "30" } }] });
    const sink = createOtlpSink({ endpoint: otlp.url, timeoutMs: 2_000, scheduledDelayMs: 3_600_000, onWarning: () => {} });
    sink.export(span(1));
    const started = Date.now();
    await sink.flush();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(otlp.attempts()).toBe(1);
    expect(sink.stats()).toMatchObject({ exported: 0, dropped: 1 });
  });

  it("refuses a bad endpoint or limit with AL_ERR_OTLP_CONFIG", () => {
    expect(() => createOtlpSink({ endpoint: "localhost:4318" })).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
    expect(() => createOtlpSink({ endpoint: "grpc://collector:4317" })).toThrow(/OTLP\/HTTP needs http: or https:/);
    expect(() => createOtlpSink({ endpoint: "http://c:4318", maxBatchSize: 0 })).toThrow(/options.maxBatchSize must be >= 1/);
  });
});

describe("createOtlpSinkFromEnv", () => {
  it("posts to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, or to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is", async () => {
    const otlp = await receiver();
    const base = createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `${otlp.url}/api/public/otel/` });
    base.export(span(1));
    await base.flush();
    const exact = createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://unused.invalid", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/custom/traces` });
    exact.export(span(2));
    await exact.flush();
    expect(otlp.requests.map((request) => request.path)).toEqual(["/api/public/otel/v1/traces", "/custom/traces"]);
  });

  it("posts to an override's endpoint or url, whichever environment endpoint is set (explicit options win)", async () => {
    const otlp = await receiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://unused.invalid", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://unused.invalid/v1/traces" };
    const byEndpoint = createOtlpSinkFromEnv(env, { endpoint: `${otlp.url}/base`, onWarning: () => {} });
    byEndpoint.export(span(1));
    await byEndpoint.flush();
    const byUrl = createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://unused.invalid" }, { url: `${otlp.url}/exact`, onWarning: () => {} });
    byUrl.export(span(2));
    await byUrl.flush();
    expect(otlp.requests.map((request) => request.path)).toEqual(["/base/v1/traces", "/exact"]);
    expect([byEndpoint.stats(), byUrl.stats()]).toEqual([
      { exported: 1, dropped: 0, queued: 0 },
      { exported: 1, dropped: 0, queued: 0 },
    ]);
  });

  it("sends OTEL_EXPORTER_OTLP_TRACES_HEADERS with the general headers, winning for a header both name, and honours OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", async () => {
    const otlp = await receiver();
    const sink = createOtlpSinkFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Basic%20general,x-tenant=acme",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "Authorization=Bearer%20traces-only",
    });
    sink.export(span(1));
    await sink.flush();
    expect(otlp.requests[0]!.headers).toMatchObject({ authorization: "Bearer traces-only", "x-tenant": "acme" });

    // A backend that never answers: the traces timeout, not the general one, bounds the export.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => (silent.closeAllConnections(), silent.close(() => resolve()))));
    const bounded = createOtlpSinkFromEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "30000", OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "200" },
      { onWarning: () => {} },
    );
    bounded.export(span(2));
    const started = Date.now();
    await bounded.flush();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(bounded.stats()).toMatchObject({ exported: 0, dropped: 1 });
  });

  it("adds an override's headers to OTEL_EXPORTER_OTLP_HEADERS, the override winning for a header both name in any case", async () => {
    const otlp = await receiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20abc,X-Tenant=from-env", OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-traces=1" };
    const added = createOtlpSinkFromEnv(env, { headers: { "x-region": "eu" } });
    added.export(span(1));
    await added.flush();
    const overridden = createOtlpSinkFromEnv(env, { headers: { "x-tenant": "from-code" } });
    overridden.export(span(2));
    await overridden.flush();
    expect(otlp.failures).toEqual([]);
    expect(otlp.requests[0]!.headers).toMatchObject({ authorization: "Basic abc", "x-tenant": "from-env", "x-traces": "1", "x-region": "eu" });
    // One x-tenant, the code's: not "from-env, from-code" joined.
    expect(otlp.requests[1]!.headers).toMatchObject({ authorization: "Basic abc", "x-tenant": "from-code", "x-traces": "1" });
    expect(() => createOtlpSinkFromEnv(env, { headers: "x-tenant=acme" as never })).toThrow(/options.headers must be object/);
  });

  it("compresses request bodies with gzip when OTEL_EXPORTER_OTLP_COMPRESSION says so, the traces variable winning, and refuses other values", async () => {
    const otlp = await receiver();
    const gzipped = createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" });
    gzipped.export(span(1));
    await gzipped.flush();
    const plain = createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_COMPRESSION: "gzip", OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "none" });
    plain.export(span(2));
    await plain.flush();
    const byOption = createOtlpSink({ endpoint: otlp.url, compression: "gzip" });
    byOption.export(span(3));
    await byOption.flush();
    expect(otlp.failures).toEqual([]);
    expect(otlp.requests.map((request) => [request.headers["content-encoding"], request.spans.map((received) => received.name)])).toEqual([
      ["gzip", [span(1).name]],
      [undefined, [span(2).name]],
      ["gzip", [span(3).name]],
    ]);
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "zstd" })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_COMPRESSION is "zstd"; OTLP\/HTTP compression is gzip or none/);
    expect(() => createOtlpSink({ endpoint: otlp.url, compression: "deflate" as never })).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
  });

  it("keeps the environment's compression and timeout when an override leaves them undefined (an optional setting not given)", async () => {
    const otlp = await receiver({ responses: [{ status: 200 }, ...Array.from({ length: 10 }, () => ({ status: 503, headers: { "retry-after": "1" } }))] });
    const configured: { compression?: "gzip" | "none"; timeoutMs?: number } = {};
    const sink = createOtlpSinkFromEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_COMPRESSION: "gzip", OTEL_EXPORTER_OTLP_TIMEOUT: "300" },
      { compression: configured.compression, timeoutMs: configured.timeoutMs, onWarning: () => undefined },
    );
    sink.export(span(1));
    await sink.flush();
    expect(otlp.requests[0]!.headers["content-encoding"]).toBe("gzip");
    // 503s from here on, asking for a second's wait: past the variable's 300 ms, not the 10 s default's, so given up at once.
    sink.export(span(2));
    const started = Date.now();
    await sink.flush();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(otlp.attempts()).toBe(2);
    expect(sink.stats()).toEqual({ exported: 1, dropped: 1, queued: 0 });
  });

  it("takes OTEL_EXPORTER_OTLP_PROTOCOL http/json, what it sends, and refuses grpc or http/protobuf, naming the variable", () => {
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })).not.toThrow();
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(/AL_ERR_OTLP_CONFIG: OTEL_EXPORTER_OTLP_PROTOCOL is "grpc"; this sink sends OTLP over HTTP with JSON bodies \(http\/json\) only/);
    expect(() => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is "http\/protobuf"/);
  });

  it("quotes a bad endpoint as written, says what is wrong with it, and names the variable it came from", () => {
    const noScheme = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" });
    expect(noScheme).toThrow(/AL_ERR_OTLP_CONFIG: OTLP endpoint "localhost:4318" is not a URL: it has no http:\/\/ or https:\/\/ scheme \(OTEL_EXPORTER_OTLP_ENDPOINT\)/);
    expect(noScheme).toThrow(/fix: Set OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/localhost:4318, or https:\/\//);
    expect(noScheme).not.toThrow(/gRPC|null/);
    const tracesVariable = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://fine:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317" });
    expect(tracesVariable).toThrow(/OTLP endpoint "grpc:\/\/collector:4317" uses grpc:; OTLP\/HTTP needs http: or https: \(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT\)/);
    expect(tracesVariable).toThrow(/fix: Set OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http:\/\/localhost:4318\/v1\/traces/);
    expect(tracesVariable).not.toThrow(/fix: .*OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => createOtlpSink({ url: "collector:4318/v1/traces" })).toThrow(/\(createOtlpSink's url option\)\s+fix: Pass createOtlpSink\(\{ url: "http:\/\/collector:4318\/v1\/traces" \}\)/);
    // A password in an endpoint without a scheme is not repeated either.
    const withPassword = () => createOtlpSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "user:hunter2@collector:4318" });
    expect(withPassword).toThrow(/OTLP endpoint "<credentials>@collector:4318" is not a URL/);
    expect(withPassword).not.toThrow(/hunter2/);
  });

  it("parses OTEL_EXPORTER_OTLP_HEADERS as comma-separated, URL-encoded key=value pairs", () => {
    expect(parseOtlpHeaders("Authorization=Basic%20YWJjOmRlZg==, x-tenant = acme ,")).toEqual({ Authorization: "Basic YWJjOmRlZg==", "x-tenant": "acme" });
    expect(parseOtlpHeaders(undefined)).toEqual({});
    expect(() => parseOtlpHeaders("Authorization")).toThrow(expect.objectContaining({ code: "AL_ERR_OTLP_CONFIG" }));
  });
});

describeTelemetrySinkConformance("createOtlpSink", async () => {
  const otlp = await startOtlpReceiver();
  const sink = createOtlpSink({ endpoint: otlp.url, maxBatchSize: 512, scheduledDelayMs: 3_600_000 });
  return {
    state: {
      sink,
      delivered: async () => {
        expect(otlp.failures).toEqual([]);
        return otlp.spans().map((item) => ({
          traceId: item.traceId,
          spanId: item.spanId,
          parentSpanId: item.parentSpanId,
          name: item.name,
          startTimeMs: Number(BigInt(item.startTimeUnixNano) / 1_000_000n),
          endTimeMs: Number(BigInt(item.endTimeUnixNano) / 1_000_000n),
          status: (["unset", "ok", "error"] as const)[item.status.code ?? 0]!,
          attributes: item.attributes as DeliveredSpan["attributes"],
          resource: item.resource as Record<string, string>,
        }));
      },
    },
    cleanup: async () => {
      await sink.shutdown();
      await otlp.close();
    },
  };
});
