import { createHmac } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, onTestFinished } from "vitest";
import type { AgentHarness, HarnessContext, HarnessTurnInput, RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle, scriptedHarness, type ModelScript, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { listenNodeRuntime, type NodeRuntimeHandle, type NodeRuntimeOptions } from "../../src/index.js";

export const FIXTURE_AGENT = resolve(import.meta.dirname, "../fixtures/host-agent");
export const FIXTURE_SECRET = "s3cret";
// The fixture channel modules read process.env themselves, as real provider modules do.
process.env.FIXTURE_SECRET = FIXTURE_SECRET;
process.env.HOST_FIXTURE_STEP_MS ??= "150";

const cleanup: string[] = [];
const hosts: NodeRuntimeHandle[] = [];
const closers: Array<() => Promise<void>> = [];
/**
 * Stop `stop` when the running test finishes, so nothing one test started (a host
 * still delivering, a server still answering) can reach the next; outside a test
 * (beforeAll) it is kept for the file's afterAll.
 */
function ownedByCurrentTest(stop: () => Promise<unknown>, orElse: () => void): void {
  try {
    onTestFinished(async () => {
      await stop();
    });
  } catch {
    orElse();
  }
}

afterAll(async () => {
  await Promise.allSettled(hosts.splice(0).map((host) => host.shutdown({ timeoutMs: 2_000 })));
  await Promise.allSettled(closers.splice(0).map((close) => close()));
  for (const dir of cleanup.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = "al-host-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(dir);
  return dir;
}

/** Copy the fixture agent to a temp folder and build it there (the repo stays clean), under `agentId` when given. */
export async function fixtureBundle(agentId?: string): Promise<RuntimeBundle & { agentDir: string }> {
  const agentDir = join(tempDir("al-host-agent-"), "agent");
  cpSync(FIXTURE_AGENT, agentDir, { recursive: true });
  if (agentId !== undefined) {
    const file = join(agentDir, "agent.ts");
    const source = readFileSync(file, "utf8");
    if (!source.includes('id: "host-agent"')) throw new Error(`the fixture's ${file} no longer says id: "host-agent"; give fixtureBundle another way to change it`);
    writeFileSync(file, source.replace('id: "host-agent"', `id: ${JSON.stringify(agentId)}`));
  }
  const { artifactRoot } = await buildAgent(agentDir);
  return { ...(await loadRuntimeBundle(artifactRoot)), agentDir };
}

/** The scripts the routed engine picks from, by the message's first word (`slow: ...`). */
export const SCRIPTS: Record<string, ModelScript> = {
  echo: { turns: [{ text: "hello back" }] },
  slow: { turns: [{ toolCalls: [{ name: "slow_step", input: {} }] }, { text: "slow done" }] },
  approve: { turns: [{ toolCalls: [{ name: "publish", input: { body: "status" } }] }, { text: "published" }] },
  "approve-slow": { turns: [{ toolCalls: [{ name: "publish", input: { body: "status" } }] }, { toolCalls: [{ name: "slow_step", input: {} }] }, { text: "published slowly" }] },
  ask: { turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which colour?" } }] }, { text: "thanks" }] },
};

/**
 * A scripted engine choosing its script from the run's message, so one host
 * serves every behaviour a test needs. Resumes rebuild the same context, so
 * they pick the same script.
 */
export function routedHarness(scripts: Record<string, ModelScript> = SCRIPTS): AgentHarness {
  const engines = Object.fromEntries(Object.entries(scripts).map(([name, script]) => [name, scriptedHarness(script)]));
  return {
    name: "scripted",
    runTurn(input: HarnessTurnInput, ctx: HarnessContext) {
      const user = [...input.context.messages].reverse().find((message) => message.role === "user");
      const word = (user?.content ?? "").split(":")[0]!.trim();
      return (engines[word] ?? engines.echo!).runTurn(input, ctx);
    },
  };
}

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  msg: string | undefined;
  fields: Record<string, unknown>;
}

export function captureLogger(): RuntimeLogger & { entries: LogEntry[]; events(name: string): LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry["level"]) => (fields: Record<string, unknown>, msg?: string) => entries.push({ level, msg, fields });
  return {
    entries,
    events: (name) => entries.filter((entry) => entry.fields.event === name),
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
  };
}

/** A host on 127.0.0.1 with in-memory state and the routed engine; shut down after the file. */
export async function startHost(
  bundle: RuntimeBundle,
  options: Partial<NodeRuntimeOptions> = {},
): Promise<NodeRuntimeHandle & { logger: ReturnType<typeof captureLogger> }> {
  const logger = captureLogger();
  const handle = await listenNodeRuntime({
    ...bundle,
    state: new InMemoryStateAdapter(),
    agentHarness: routedHarness(),
    port: 0,
    host: "127.0.0.1",
    devMode: true,
    logger,
    env: { FIXTURE_SECRET },
    ...options,
  });
  ownedByCurrentTest(() => handle.shutdown({ timeoutMs: 2_000 }), () => hosts.push(handle));
  return Object.assign(handle, { logger: (options.logger as ReturnType<typeof captureLogger>) ?? logger });
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

export async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; raw?: string | Uint8Array } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers };
  const response = await fetch(url, {
    method: init.method ?? (init.body !== undefined || init.raw !== undefined ? "POST" : "GET"),
    headers,
    ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body };
}

/** A provider webhook, signed the way the fixture channel verifies. */
export function signedEvent(body: unknown, secret = FIXTURE_SECRET): { raw: string; headers: Record<string, string> } {
  const raw = JSON.stringify(body);
  return { raw, headers: { "content-type": "application/json", "x-fixture-signature": createHmac("sha256", secret).update(raw).digest("hex") } };
}

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function fixtureProbe(): { active: number; maxActive: number; order: string[] } {
  return ((globalThis as { __hostFixture?: { active: number; maxActive: number; order: string[] } }).__hostFixture ??= { active: 0, maxActive: 0, order: [] });
}

export interface CaptureServer {
  url: string;
  requests: Array<{ method: string; path: string; headers: Record<string, string | string[] | undefined>; body: string; status: number }>;
  close(): Promise<void>;
}

/** A local HTTP server that records what reaches it; `respond` picks each status (default 200). */
export async function captureServer(
  respond: (request: { path: string; index: number }) => { status: number; body?: string | Uint8Array; headers?: Record<string, string> } = () => ({ status: 200 }),
): Promise<CaptureServer> {
  const { createServer } = await import("node:http");
  const requests: CaptureServer["requests"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const answer = respond({ path: req.url ?? "/", index: requests.length });
      requests.push({ method: req.method ?? "GET", path: req.url ?? "/", headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status: answer.status });
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  ownedByCurrentTest(close, () => closers.push(close));
  return { url: `http://127.0.0.1:${port}`, requests, close };
}

/** An in-memory state whose delivery claims are counted. */
export function countingClaimsState(): { state: InMemoryStateAdapter; claims(): number } {
  const state = new InMemoryStateAdapter();
  let claims = 0;
  const claim = state.claimDeliveries.bind(state);
  state.claimDeliveries = (options) => {
    claims += 1;
    return claim(options);
  };
  return { state, claims: () => claims };
}
