import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { STATE_FACET_METHODS } from "@assemblyline-agents/core";
import { verifyPluginPackage } from "@assemblyline-agents/registry";
import { pluginsCommand } from "../src/cli/commands/plugins.js";

const root = resolve(import.meta.dirname, "../../..");
const tsc = join(root, "node_modules/.bin/tsc");
const folders: string[] = [];
/** `npm run build` of a scaffolded package; a type error fails the test with tsc's own output. */
const build = (dir: string) =>
  promisify(execFile)(tsc, ["-p", "."], { cwd: dir }).catch((error: { stdout?: string }) => {
    throw new Error(`tsc -p ${dir} failed:\n${error.stdout ?? String(error)}`);
  });

/**
 * `npm test` of a scaffolded package: its own vitest on its own test/ folder. An
 * empty config beside the package stands in for the one vitest would otherwise
 * find up in this repository, which an author's package does not sit in.
 */
async function npmTest(dir: string): Promise<{ numPassedTests: number; numFailedTests: number; failures: string[] }> {
  const config = join(dir, "..", "vitest.config.mjs");
  await writeFile(config, "export default {};\n");
  const run = await promisify(execFile)(join(root, "node_modules/.bin/vitest"), ["run", "--config", config, "--reporter=json"], { cwd: dir, maxBuffer: 64 * 1024 * 1024 }).catch(
    (error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: error.stderr ?? String(error) }),
  );
  const start = run.stdout.indexOf("{");
  if (start < 0) throw new Error(`npm test in ${dir} printed no report:\n${run.stderr}`);
  const report = JSON.parse(run.stdout.slice(start)) as { numPassedTests: number; numFailedTests: number; testResults: Array<{ assertionResults: Array<{ failureMessages: string[] }> }> };
  return { ...report, failures: report.testResults.flatMap((file) => file.assertionResults.flatMap((test) => test.failureMessages)) };
}

afterAll(async () => {
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

/**
 * Scaffold into a folder inside this repository, so the package resolves
 * @assemblyline-agents/core, typescript and vitest from its node_modules as an
 * author's does after `npm install`; build it with tsc as `npm run build` does.
 */
async function scaffold(slot: string): Promise<{ dir: string; out: string[] }> {
  const parent = await mkdtemp(join(import.meta.dirname, ".scaffold-"));
  folders.push(parent);
  const dir = join(parent, slot);
  const out: string[] = [];
  const code = await pluginsCommand(["new", `@acme/assembly-line-kit-${slot}`, "--slot", slot, "--id", `kit-${slot}`, "--dir", dir], { out: (line) => out.push(line), err: (line) => out.push(line) });
  expect(code).toBe(0);
  await build(dir);
  return { dir, out };
}

/**
 * `npm install <names>` in a scaffolded package: the dependencies land in its
 * package.json at the range npm would record; the packages themselves resolve
 * from this repository's node_modules, as core does.
 */
async function npmInstall(dir: string, names: string[]): Promise<void> {
  const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
  for (const name of names) {
    const { version } = JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string };
    manifest.dependencies = { ...manifest.dependencies, [name]: `^${version}` };
  }
  await writeFile(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** Step 2's "declare its options in config.schema.json": the schema's properties. */
async function declareOptions(dir: string, properties: Record<string, unknown>): Promise<void> {
  const schema = JSON.parse(await readFile(join(dir, "config.schema.json"), "utf8")) as { properties: Record<string, unknown> };
  schema.properties = { ...schema.properties, ...properties };
  await writeFile(join(dir, "config.schema.json"), `${JSON.stringify(schema, null, 2)}\n`);
}

/** Each kind, the kit `verify` runs on it, and the file its stubs name. */
const KINDS = [
  { slot: "state", kit: "describeStateConformance", file: "src/state.ts" },
  { slot: "blob", kit: "describeBlobStoreConformance", file: "src/blob-store.ts" },
  { slot: "sandbox", kit: "describeSandboxConformance", file: "src/sandbox-adapter.ts" },
  { slot: "scheduler", kit: "describeSchedulerConformance", file: "src/scheduler.ts" },
  { slot: "deploy", kit: "describeDeployConformance", file: "src/deploy-target.ts" },
  { slot: "runtime", kit: "describeRuntimeConformance", file: "src/host.ts" },
  { slot: "harness", kit: "describeHarnessConformance", file: "src/harness.ts" },
  { slot: "channel", kit: "describeChannelConformance", file: "src/channel.ts" },
  { slot: "telemetry-sink", kit: "describeTelemetrySinkConformance", file: "src/sink.ts" },
];

describe("plugins new --slot <kind>: a skeleton that builds, whose kit fails clearly until it is written", () => {
  it.each(KINDS)("$slot: verify passes the loader's checks, runs $kit and names $file in its failures", async ({ slot, kit, file }) => {
    const { dir } = await scaffold(slot);
    const report = await verifyPluginPackage(dir, { testTimeoutMs: 20_000 });
    expect(report.steps.map((step) => [step.step, step.ok])).toEqual([
      ["manifest", true],
      ["kernel range", true],
      ["exports", true],
      ["options and live contracts", true],
      ["published files", true],
    ]);
    expect(report.ok).toBe(false);
    expect(report.kits).toHaveLength(1);
    const [outcome] = report.kits;
    expect(outcome).toMatchObject({ kit });
    expect(outcome!.failed).toBeGreaterThan(0);
    expect(outcome!.failures.some((failure) => failure.message.includes(`is not implemented yet: write it in ${file}`))).toBe(true);
    // `npm test` (the README's step 3) fails the same way before the file is written.
    const tested = await npmTest(dir);
    expect(tested.numFailedTests).toBeGreaterThan(0);
    expect(tested.failures.some((message) => message.includes(`is not implemented yet: write it in ${file}`))).toBe(true);
  }, 180_000);

  it.each(Object.entries(WRITTEN))("%s: verify passes once the file the skeleton names is written", async (slot, { file, source, install, options }) => {
    const { dir, out } = await scaffold(slot);
    expect(out.join("\n")).toContain(` ${file} `);
    if (install) await npmInstall(dir, install);
    await writeFile(join(dir, file), source);
    if (options) await declareOptions(dir, options.schema);
    await build(dir);
    // The README's step 3, `npm run build && npm test`: the package's own kit run.
    // (A kit may skip what a subject does not offer, e.g. a channel's handshake.)
    const tested = await npmTest(dir);
    expect(tested.numFailedTests).toBe(0);
    expect(tested.numPassedTests).toBeGreaterThan(0);
    const report = await verifyPluginPackage(dir, { testTimeoutMs: 60_000, ...(options ? { options: options.given } : {}) });
    expect(report.steps.every((step) => step.ok), JSON.stringify(report.steps)).toBe(true);
    expect(report.kits.map((kit) => [kit.kit, kit.failed, kit.failures])).toEqual([[KINDS.find((kind) => kind.slot === slot)!.kit, 0, []]]);
    expect(report.kits[0]!.passed).toBeGreaterThan(0);
    expect(report.ok).toBe(true);
  }, 300_000);

  it("telemetry-sink: verify passes once the sink is written as the README says", async () => {
    const { dir, out } = await scaffold("telemetry-sink");
    expect(out.join("\n")).toContain("implement src/sink.ts");
    // Queue in export(), send in flush(): what the skeleton's doc comment asks for, to the skeleton's own backend.
    await writeFile(
      join(dir, "src/sink.ts"),
      `import type { TelemetrySink, TelemetrySpan } from "@assemblyline-agents/core";

export interface KitTelemetrySinkSinkOptions {
  endpoint?: string;
}

export function createKitTelemetrySinkSink(options: KitTelemetrySinkSinkOptions = {}): TelemetrySink & { shutdown(): Promise<void> } {
  let queue: object[] = [];
  const flush = async (): Promise<void> => {
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    const response = await fetch(options.endpoint ?? "http://127.0.0.1:4318/spans", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(batch) });
    if (!response.ok) throw new Error("the backend answered " + response.status);
  };
  return {
    export(span: TelemetrySpan): void {
      queue.push({
        traceId: span.traceId,
        spanId: span.spanId,
        ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
        name: span.name,
        startTimeMs: span.startTimeMs,
        endTimeMs: span.endTimeMs,
        status: span.status.code,
        attributes: structuredClone(span.attributes),
        resource: structuredClone(span.resource),
      });
    },
    flush,
    shutdown: flush,
  };
}
`,
    );
    await build(dir);
    const tested = await npmTest(dir);
    expect(tested.numFailedTests).toBe(0);
    expect(tested.numPassedTests).toBeGreaterThan(0);
    const report = await verifyPluginPackage(dir);
    expect(report.kits.map((kit) => [kit.kit, kit.failed, kit.failures])).toEqual([["describeTelemetrySinkConformance", 0, []]]);
    expect(report.ok).toBe(true);
  }, 180_000);
});

/**
 * What an author writes in place of a skeleton's stubs (against the skeleton's own
 * src/testkit.ts for the kinds that ship one), and what they `npm install` for it.
 */
const WRITTEN: Record<string, { file: string; source: string; install?: string[]; options?: { schema: Record<string, unknown>; given: Record<string, unknown> } }> = {
  blob: {
    file: "src/blob-store.ts",
    // A store in memory: enough for the kit, which takes a fresh adapter per test.
    source: `import { blobBodyBytes, blobContentType, type BlobStore } from "@assemblyline-agents/core";

export interface KitBlobBlobStoreOptions {}

export class KitBlobBlobStore implements BlobStore {
  private readonly blobs = new Map<string, { body: Uint8Array; contentType: string }>();
  constructor(readonly options: KitBlobBlobStoreOptions = {}) {}
  async close(): Promise<void> {}
  async put(key: string, body: Uint8Array, options?: { contentType?: string }) {
    // Core's rules for the body and content type, so a blob moves between stores.
    const bytes = new Uint8Array(blobBodyBytes(key, body));
    this.blobs.set(key, { body: bytes, contentType: blobContentType(key, options?.contentType) });
    return { key, size: body.byteLength };
  }
  async get(key: string) {
    const blob = this.blobs.get(key);
    return blob ? { body: new Uint8Array(blob.body), contentType: blob.contentType } : undefined;
  }
  async delete(key: string): Promise<void> {
    this.blobs.delete(key);
  }
  async list(prefix = ""): Promise<string[]> {
    return [...this.blobs.keys()].filter((key) => key.startsWith(prefix)).sort();
  }
}
`,
  },
  state: {
    file: "src/state.ts",
    install: ["@assemblyline-agents/runtime"],
    // The runs facet (the scaffold's default) over the kernel's in-memory state, method by method.
    source: `import type { RunStore } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";

export interface KitStateStateOptions {}

export class KitStateState implements RunStore {
  private readonly store = new InMemoryStateAdapter();
  constructor(readonly options: KitStateStateOptions = {}) {}
  async close(): Promise<void> {}
${STATE_FACET_METHODS.runs.map((method) => `  ${method}(...args: Parameters<RunStore["${method}"]>): ReturnType<RunStore["${method}"]> {\n    return this.store.${method}(...args);\n  }`).join("\n")}
}
`,
  },
  sandbox: {
    file: "src/sandbox-adapter.ts",
    install: ["@assemblyline-agents/local"],
    // Workspaces in a folder of their own, removed at close.
    source: `import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Sandbox, SandboxAdapter } from "@assemblyline-agents/core";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";

export interface KitSandboxSandboxOptions {}

export class KitSandboxSandbox implements SandboxAdapter {
  readonly name = "kit-sandbox";
  private readonly root = mkdtempSync(join(tmpdir(), "kit-sandbox-"));
  private readonly local = new LocalSandboxAdapter({ root: this.root });
  constructor(readonly options: KitSandboxSandboxOptions = {}) {}
  async close(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
  acquire(key: string): Promise<Sandbox> {
    return this.local.acquire(key);
  }
  release(key: string): Promise<void> {
    return this.local.release(key);
  }
}
`,
  },
  scheduler: {
    file: "src/scheduler.ts",
    install: ["@assemblyline-agents/local"],
    options: { schema: { pollIntervalMs: { type: "integer", minimum: 1, description: "How often to look for due schedules." } }, given: { pollIntervalMs: 20 } },
    // The embedded polling scheduler, on the store the scaffold hands the class.
    source: `import type { ScheduleDispatch, Scheduler, SchedulerStartOptions, ScheduleStateStore } from "@assemblyline-agents/core";
import { LocalScheduler } from "@assemblyline-agents/local";

export interface KitSchedulerSchedulerOptions {
  pollIntervalMs?: number;
}

export class KitSchedulerScheduler implements Scheduler {
  private readonly local: LocalScheduler;
  constructor(
    readonly options: KitSchedulerSchedulerOptions = {},
    readonly schedules?: ScheduleStateStore,
  ) {
    this.local = new LocalScheduler({ store: () => this.schedules, pollIntervalMs: options.pollIntervalMs ?? 50 });
  }
  async close(): Promise<void> {
    await this.local.stop();
  }
  start(dispatch: ScheduleDispatch, options?: SchedulerStartOptions): Promise<void> {
    return this.local.start(dispatch, options);
  }
  stop(): Promise<void> {
    return this.local.stop();
  }
}
`,
  },
  deploy: {
    file: "src/deploy-target.ts",
    options: { schema: { directory: { type: "string", description: "Where releases go, one folder per revision." } }, given: { directory: join(tmpdir(), "kit-deploy-{{unique}}") } },
    // Ships a built revision by copying its artifact folder, named by revision, into a releases folder.
    source: `import { existsSync } from "node:fs";
import { cp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { AssemblyLineError, type DeployTarget } from "@assemblyline-agents/core";

export interface KitDeployDeployTargetOptions {
  directory?: string;
}

export class KitDeployDeployTarget implements DeployTarget {
  readonly name = "kit-deploy";
  constructor(readonly options: KitDeployDeployTargetOptions = {}) {}
  async close(): Promise<void> {}
  async deploy(args: { artifactRoot: string; env: Record<string, string | undefined> }): Promise<{ url?: string; id: string }> {
    const manifestPath = join(resolve(args.artifactRoot), "manifest.json");
    if (!existsSync(manifestPath)) {
      throw new AssemblyLineError("AL_ERR_MANIFEST_MISSING", "no manifest at " + manifestPath + " to deploy", { fix: "Run assembly-line build <agentDir> first." });
    }
    const { agentRevision } = JSON.parse(await readFile(manifestPath, "utf8")) as { agentRevision: string };
    const release = join(resolve(this.options.directory ?? join(tmpdir(), "kit-deploy-releases")), agentRevision);
    await cp(resolve(args.artifactRoot), release, { recursive: true });
    return { id: agentRevision, url: pathToFileURL(release).href };
  }
}
`,
  },
  harness: {
    file: "src/harness.ts",
    // An engine for the skeleton's JSON model server: one POST per model call, journaled, abortable, resumable.
    source: `import type { AgentHarness, HarnessContext, HarnessTurnInput, HarnessTurnResult, JsonValue, ModelToolCall } from "@assemblyline-agents/core";

export interface KitHarnessHarnessOptions {
  baseUrl?: string;
  apiKey?: string;
}

type Reply = { text: string } | { toolCall: ModelToolCall };
interface State {
  items: Array<{ role: string; content: JsonValue }>;
  pending?: ModelToolCall;
  calls: number;
}

export function kitHarnessAgentHarness(options: KitHarnessHarnessOptions = {}): AgentHarness {
  return {
    name: "kit-harness",
    async runTurn(input: HarnessTurnInput, ctx: HarnessContext): Promise<HarnessTurnResult> {
      let state: State;
      if (input.continuation) {
        const { harness, version } = input.continuation;
        if (harness !== "kit-harness" || version !== 1) throw new Error("this continuation was made by " + harness + " v" + version + ", not kit-harness v1");
        state = input.continuation.data as unknown as State;
      } else {
        state = { items: input.context.messages.map((message) => ({ role: message.role, content: message.content })), calls: 0 };
      }
      for (;;) {
        if (state.pending) {
          const outcome = await ctx.callTool(state.pending);
          if (outcome.status === "paused") return { status: "paused", continuation: { version: 1, harness: "kit-harness", agentRevision: input.agentRevision, data: state as unknown as JsonValue } };
          if (outcome.status === "failed") return { status: "completed", response: { text: outcome.output.error } };
          state.items.push({ role: "tool", content: JSON.stringify(outcome.output) });
          delete state.pending;
        }
        state.calls += 1;
        const reply = (await ctx.modelCall("model:" + state.calls, async () => {
          const response = await fetch(options.baseUrl!, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: "Bearer " + options.apiKey },
            body: JSON.stringify({ model: input.modelSpec, instructions: input.context.instructions, tools: input.context.tools.map((tool) => tool.name), items: state.items }),
            signal: ctx.signal,
          });
          if (!response.ok) throw new Error("the model server answered " + response.status);
          return (await response.json()) as JsonValue;
        })) as unknown as Reply;
        if ("text" in reply) {
          ctx.textDelta(reply.text);
          return { status: "completed", response: { text: reply.text } };
        }
        state.items.push({ role: "assistant", content: JSON.stringify(reply.toolCall) });
        state.pending = reply.toolCall;
      }
    },
  };
}
`,
  },
  channel: {
    file: "src/channel.ts",
    // HMAC-checked webhooks and replies posted to the provider, as the skeleton's fake provider speaks them.
    source: `import { createHmac, timingSafeEqual } from "node:crypto";
import type { ChannelAck, ChannelAttachment, ChannelDelivery, ChannelModule, ChannelRequest, ChannelTurn } from "@assemblyline-agents/core";

export interface KitChannelChannelOptions {
  signingSecret?: string;
  apiBaseUrl?: string;
}

export function defineKitChannelChannel(options: KitChannelChannelOptions = {}): ChannelModule {
  return {
    config: { transport: "http", route: "/kit-channel/events", methods: ["POST"] },
    async normalizeHttp(request: ChannelRequest): Promise<ChannelTurn | ChannelAck> {
      const expected = createHmac("sha256", options.signingSecret ?? "").update(request.rawBody).digest();
      const given = Buffer.from(request.headers["x-signature"] ?? "", "hex");
      if (!options.signingSecret || given.length !== expected.length || !timingSafeEqual(given, expected)) throw Object.assign(new Error("bad signature"), { status: 401 });
      const body = request.body as unknown as { id: string; conversation: string; text: string; attachment?: ChannelAttachment };
      return { eventId: body.id, conversationId: "kit:" + body.conversation, message: body.text, metadata: { conversation: body.conversation }, ...(body.attachment ? { attachments: [body.attachment] } : {}) };
    },
    async deliver(delivery: ChannelDelivery): Promise<void> {
      const response = await fetch(options.apiBaseUrl + "/messages", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ eventId: delivery.metadata?.eventId, text: delivery.text }) });
      if (!response.ok) throw new Error("the provider answered " + response.status);
    },
  };
}
`,
  },
  runtime: {
    file: "src/host.ts",
    install: ["@assemblyline-agents/node", "@assemblyline-agents/runtime"],
    // The Node host does the serving; a real runtime plugin would be its own host.
    source: `import type { AgentHarness } from "@assemblyline-agents/core";
import { listenNodeRuntime } from "@assemblyline-agents/node";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle, noopLogger } from "@assemblyline-agents/runtime";

export interface KitRuntimeHostOptions {
  agentDir: string;
  harness?: AgentHarness;
  port?: number;
  host?: string;
}

export interface KitRuntimeHost {
  url: string;
  shutdown(): Promise<void>;
}

export async function listenKitRuntimeRuntime(options: KitRuntimeHostOptions): Promise<KitRuntimeHost> {
  const { artifactRoot } = await buildAgent(options.agentDir);
  const handle = await listenNodeRuntime({
    ...(await loadRuntimeBundle(artifactRoot)),
    state: new InMemoryStateAdapter(),
    ...(options.harness ? { agentHarness: options.harness } : {}),
    port: options.port ?? 0,
    host: options.host ?? "127.0.0.1",
    devMode: true,
    logger: noopLogger(),
  });
  return { url: handle.url, shutdown: () => handle.shutdown({ timeoutMs: 5_000 }) };
}
`,
  },
};

describe("plugins new: a command line it cannot scaffold is refused before anything is written", () => {
  it("refuses --facets naming a facet twice, naming it, rather than write a manifest its own verify refuses", async () => {
    const parent = await mkdtemp(join(tmpdir(), "al-new-facets-"));
    folders.push(parent);
    const dir = join(parent, "dup");
    const refusal = pluginsCommand(["new", "@acme/assembly-line-dup", "--slot", "state", "--facets", "runs,runs,conversations", "--dir", dir], { out: () => undefined, err: () => undefined });
    await expect(refusal).rejects.toMatchObject({ code: "AL_ERR_CLI_USAGE", message: expect.stringContaining('--facets runs,runs,conversations names "runs" more than once'), fix: expect.stringContaining("--facets runs,conversations") });
    expect(existsSync(dir)).toBe(false);
  });
});

describe("plugins new: a package ready to publish on its own", () => {
  it("ships an MIT LICENSE and a README beside its license field, for an adapter and a subject-kit package", async () => {
    const parent = await mkdtemp(join(tmpdir(), "al-new-license-"));
    folders.push(parent);
    for (const slot of ["blob", "telemetry-sink"]) {
      const dir = join(parent, slot);
      const code = await pluginsCommand(["new", `@acme/assembly-line-lic-${slot}`, "--slot", slot, "--dir", dir], { out: () => undefined, err: () => undefined });
      expect(code).toBe(0);
      const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as { license: string };
      expect(manifest.license).toBe("MIT");
      const license = await readFile(join(dir, "LICENSE"), "utf8");
      expect(license).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} the authors of @acme\/assembly-line-lic-/);
      const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir });
      const packed = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((file) => file.path);
      expect(packed, slot).toEqual(expect.arrayContaining(["LICENSE", "README.md", "package.json", ...(slot === "blob" ? ["config.schema.json"] : [])]));
    }
  });
});
