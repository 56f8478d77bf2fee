import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { KERNEL_VERSION } from "@assemblyline-agents/runtime";
import { pluginsCommand } from "../../plugins/node/src/cli/commands/plugins.js";
import { codexRuns } from "../../plugins/codex/src/testkit/index.js";

const root = resolve(import.meta.dirname, "../..");
const thirdParty = join(root, "examples/third-party-plugin");
const fixture = (name: string) => join(import.meta.dirname, "fixtures", name);

/** Runs the command with an IO that keeps what it prints. */
async function plugins(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await pluginsCommand(args, { out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const folders: string[] = [];
afterAll(async () => {
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

describe("assembly-line plugins list, search and info", () => {
  it("lists every first-party plugin with its version, contracts and kernel range", async () => {
    const { code, out } = await plugins("list");
    expect(code).toBe(0);
    const rows = out.split("\n");
    expect(rows[0]).toMatch(/^id\s+package\s+version\s+kernel\s+fits \S+\s+contracts$/);
    expect(rows.find((row) => row.startsWith("local "))).toMatch(/@assemblyline-agents\/local\s+0\.1\.0\s+\^0\.1\.0\s+yes\s+state@1 \(9 facets\), blob@1/);
    expect(rows.find((row) => row.startsWith("postgres "))).toMatch(/@assemblyline-agents\/postgres\s+\S+\s+\^0\.1\.0\s+yes\s+state@1/);
    expect(rows.find((row) => row.startsWith("node "))).toMatch(/@assemblyline-agents\/node\s+\S+\s+\^0\.1\.0\s+yes\s+runtime@1/);
    expect(rows.find((row) => row.startsWith("pi "))).toMatch(/@assemblyline-agents\/pi\s+\S+\s+\^0\.1\.0\s+yes\s+harness@1$/);
    expect(rows.find((row) => row.startsWith("connections "))).toMatch(/\(no gateway slots\)$/);
  });

  it("prints the listing as JSON with --json", async () => {
    const { out } = await plugins("list", "--json");
    const listing = (JSON.parse(out) as { ok: true; data: { kernelVersion: string; plugins: Array<{ id: string }> } }).data;
    expect(listing.kernelVersion).toBe(KERNEL_VERSION);
    expect(listing.plugins.map((plugin) => plugin.id)).toEqual(["codex", "connections", "daytona", "discord", "docker", "e2b", "local", "modal", "node", "otlp", "pi", "postgres", "redis", "s3"]);
  });

  it("finds plugins matching every word, and says so when none match", async () => {
    expect((await plugins("search", "state", "sql")).out).toMatch(/^postgres /m);
    expect((await plugins("search", "state", "sql")).out).not.toMatch(/^local /m);
    expect((await plugins("search", "blob")).out).toMatch(/^local /m);
    expect((await plugins("search", "kubernetes")).out).toMatch(/no plugin matches "kubernetes"/);
  });

  it("shows a plugin's adapters, facets, env and the gateway.ts lines to use it", async () => {
    const { code, out } = await plugins("info", "local");
    expect(code).toBe(0);
    expect(out).toContain('state "local" via localState(): state@1, facets runs, conversations, schedules, files, usage, sandboxSessions, memory, settings');
    expect(out).toContain(`kernel: ^0.1.0 (includes this kernel ${KERNEL_VERSION})`);
    expect(out).toMatch(/import \{ localState, localBlob[^}]*\} from "@assemblyline-agents\/local";/);
    expect(out).toContain("state: localState(),");
    expect((await plugins("info", "pi")).out).toContain("OPENAI_API_KEY (optional, secret)");
  });

  it("finds engines, channels and telemetry sinks by contract, and info says where each is used", async () => {
    const ids = (out: string) => out.split("\n").slice(1).map((row) => row.split(" ")[0]);
    expect(ids((await plugins("search", "harness@1")).out)).toEqual(["codex", "pi"]);
    expect(ids((await plugins("search", "channel@1")).out)).toEqual(["discord"]);
    expect(ids((await plugins("search", "telemetry@1")).out)).toEqual(["otlp"]);
    const otlp = (await plugins("info", "otlp")).out;
    expect(otlp).toContain("provides: no gateway slot\n");
    expect(otlp).toContain('telemetry sinks:\n    "otlp" via createOtlpSink(): telemetry@1; return it from setup() in an agent\'s instrumentation.ts');
    expect((await plugins("info", "pi")).out).toContain('harnesses:\n    "pi" via piAgentHarness(): harness@1');
    expect((await plugins("info", "discord")).out).toContain('channels:\n    "discord" via defineDiscordChannel(): channel@1');
    const json = JSON.parse((await plugins("info", "codex", "--json")).out) as { data: { plugin: { harnesses: Array<{ name: string }> } } };
    expect(json.data.plugin.harnesses.map((harness) => harness.name)).toEqual(["codex"]);
  });

  it("refuses an unknown id naming the ones that exist", async () => {
    await expect(plugins("info", "kubernetes")).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_NOT_FOUND", message: expect.stringContaining("local, modal, node, otlp, pi, postgres") });
    await expect(plugins("frobnicate")).rejects.toMatchObject({ code: "AL_ERR_CLI_USAGE" });
  });
});

describe("assembly-line plugins verify", () => {
  it("passes the third-party example: schema, kernel range, exports, live contract and the state kit", async () => {
    const { code, out } = await plugins("verify", thirdParty);
    expect(code).toBe(0);
    expect(out).toMatch(/pass {2}manifest: .*id "jsonfile"/);
    expect(out).toMatch(/pass {2}kernel range: "\^0\.1\.0" includes kernel/);
    expect(out).toMatch(/pass {2}exports: the package main exports plugin, jsonFileState\(\)/);
    expect(out).toMatch(/pass {2}options and live contracts: state "jsonfile" has every method of state@1 \(runs, conversations, usage\)/);
    expect(out).toMatch(/pass {2}published files: npm pack would ship src\/index\.js, config\.schema\.json$/m);
    expect(out).toMatch(/pass {2}conformance state "jsonfile" \(state@1\) with describeStateConformance: \d+ passed$/m);
    expect(out).toContain("verify passed: @acme/assembly-line-jsonfile@0.3.0 (plugin jsonfile) is ready to publish");
  });

  it("fails the variant built for another kernel with AL_ERR_PLUGIN_KERNEL_MISMATCH and runs no kit", async () => {
    const { code, out, err } = await plugins("verify", fixture("wrong-kernel-range"));
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}kernel range: AL_ERR_PLUGIN_KERNEL_MISMATCH: plugin jsonfile@0\.3\.0 .*"\^2\.0\.0" does not include the running kernel/);
    expect(out).not.toContain("conformance");
    expect(err).toContain("verify failed");
  });

  it("fails the variant missing a facet method with AL_ERR_PLUGIN_CONTRACT naming the method", async () => {
    const { code, out } = await plugins("verify", fixture("missing-facet-method"));
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}options and live contracts: AL_ERR_PLUGIN_CONTRACT: .*lacks conversations\.listConversationMessages/);
  });

  it("reports each failing conformance test by name", async () => {
    const broken = await mkdtemp(join(tmpdir(), "al-verify-broken-"));
    folders.push(broken);
    // Methods all present, semantics wrong: only the kit can tell.
    await writeFile(join(broken, "package.json"), JSON.stringify({
      name: "@acme/forgetful", version: "1.0.0", type: "module", main: "./index.js",
      assemblyLine: { manifestVersion: 1, id: "forgetful", kernel: "^0.1.0", provides: [{ slot: "state", name: "forgetful", export: "forgetfulState", contract: "state@1", facets: ["runs", "conversations"] }] },
    }));
    await writeFile(join(broken, "index.js"), [
      'import { adapterDescriptor, definePlugin } from "@assemblyline-agents/core";',
      `import { JsonFileState } from ${JSON.stringify(join(thirdParty, "src/json-file-state.js"))};`,
      "class Forgetful extends JsonFileState { async listConversationMessages() { return []; } }",
      'export const forgetfulState = (options = {}) => adapterDescriptor("state", "forgetful", options);',
      'export const plugin = definePlugin({ name: "forgetful", version: "1.0.0", apply(kernel) {',
      '  kernel.hooks.slot.for("state").tapPromise("forgetful", async (d, ctx) => d.plugin === "forgetful" ? Forgetful.open({ file: `${ctx.agentDir}/s.json` }) : undefined);',
      "} });",
    ].join("\n"));
    const { code, out } = await plugins("verify", broken);
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}conformance state "forgetful" \(state@1\) with describeStateConformance: \d+ passed, [1-9]\d* failed/);
    expect(out).toMatch(/- .*ConversationStore conformance > lists appended messages oldest first, per conversation: /);
  });

  it("runs a state adapter's kit on the subject factory its conformance entry names, not on the adapter verify materializes", async () => {
    const named = await mkdtemp(join(tmpdir(), "al-verify-state-subject-"));
    folders.push(named);
    await cp(thirdParty, named, { recursive: true, filter: (source) => !source.includes("node_modules") });
    const packageJson = JSON.parse(await readFile(join(named, "package.json"), "utf8")) as {
      exports: Record<string, unknown>;
      files: string[];
      assemblyLine: { provides: Array<Record<string, unknown>> };
    };
    packageJson.exports["./testkit"] = "./testkit.js";
    packageJson.files.push("testkit.js");
    packageJson.assemblyLine.provides[0]!.conformance = { module: "./testkit", export: "forgetfulStateKitSubject" };
    await writeFile(join(named, "package.json"), JSON.stringify(packageJson, null, 2));
    // The adapter the plugin materializes is sound; the subject its author names forgets conversations, and only its kit run can say so.
    await writeFile(join(named, "testkit.js"), [
      'import { mkdtemp, rm } from "node:fs/promises";',
      'import { tmpdir } from "node:os";',
      'import { join } from "node:path";',
      `import { JsonFileState } from ${JSON.stringify(join(thirdParty, "src/json-file-state.js"))};`,
      "class Forgetful extends JsonFileState { async listConversationMessages() { return []; } }",
      "export async function forgetfulStateKitSubject() {",
      '  const dir = await mkdtemp(join(tmpdir(), "al-forgetful-subject-"));',
      '  const state = await Forgetful.open({ file: join(dir, "state.json") });',
      "  return { state, cleanup: async () => { await state.close(); await rm(dir, { recursive: true, force: true }); } };",
      "}",
    ].join("\n"));
    const { code, out } = await plugins("verify", named);
    expect(code).toBe(1);
    expect(out).toMatch(/pass {2}options and live contracts: state "jsonfile" has every method of state@1/);
    expect(out).toMatch(/pass {2}published files: npm pack would ship .*testkit\.js/);
    expect(out).toMatch(/FAIL {2}conformance state "jsonfile" \(state@1\) with describeStateConformance: \d+ passed, [1-9]\d* failed/);
    // The manifest's facets reach the kit: the conversations facet is checked on the named subject.
    expect(out).toMatch(/- .*ConversationStore conformance > lists appended messages oldest first, per conversation: /);
  });

  it("runs the channel kit for a package's channels: the Discord channel passes", async () => {
    const { code, out } = await plugins("verify", join(root, "plugins/discord"));
    expect(code).toBe(0);
    expect(out).toMatch(/pass {2}exports: the package main exports defineDiscordChannel\(\)/);
    expect(out).toMatch(/pass {2}conformance channel "discord" \(channel@1\) with describeChannelConformance: 8 passed$/m);
  });

  it("fails a channel that accepts unsigned requests, naming the kit test", async () => {
    const open = await mkdtemp(join(tmpdir(), "al-verify-open-channel-"));
    folders.push(open);
    await writeFile(join(open, "package.json"), JSON.stringify({
      name: "@acme/open-channel", version: "1.0.0", type: "module", main: "./index.js", exports: { ".": "./index.js", "./testkit": "./testkit.js" },
      assemblyLine: { manifestVersion: 1, id: "open-channel", kernel: "^0.1.0", provides: [], channels: [{ name: "open", export: "defineOpenChannel", contract: "channel@1", conformance: { module: "./testkit", export: "subject" } }] },
    }));
    await writeFile(join(open, "index.js"), [
      `import { defineChannel } from ${JSON.stringify(join(root, "plugin-sdk/dist/index.js"))};`,
      'export const defineOpenChannel = () => defineChannel({ transport: "http", route: "/open" });',
      // Trusts whatever arrives: no signature check.
      "export const normalizeHttp = (request) => ({ eventId: request.body.id, conversationId: request.body.conversation, message: request.body.text });",
    ].join("\n"));
    await writeFile(join(open, "testkit.js"), [
      'import { normalizeHttp } from "./index.js";',
      "const sent = [];",
      "const request = (event, signature) => ({ method: 'POST', path: '/open', headers: signature ? { 'x-signature': signature } : {}, body: { id: event.id, conversation: event.conversationKey, text: event.text }, rawBody: new Uint8Array() });",
      "export const subject = () => ({ state: {",
      "  module: { config: { transport: 'http', route: '/open' }, normalizeHttp, deliver: async (d) => { sent.push(d); } },",
      "  request: (event) => request(event, 'good'),",
      "  forgeries: (event) => [{ name: 'no signature', request: request(event, undefined) }],",
      "  received: (eventId) => sent.filter((d) => d.metadata.eventId === eventId).map((d) => d.text),",
      "} });",
    ].join("\n"));
    const { code, out } = await plugins("verify", open);
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}conformance channel "open" \(channel@1\) with describeChannelConformance: \d+ passed, [1-9]\d* failed/);
    expect(out).toMatch(/- .*ChannelModule conformance > refuses every forged, stale or unauthenticated request with 401 or 403: /);
  });

  it("runs the runtime kit on the subject a runtime plugin ships: the Node host passes", async () => {
    const { code, out } = await plugins("verify", join(root, "plugins/node"));
    expect(code).toBe(0);
    expect(out).toMatch(/pass {2}conformance runtime "node" \(runtime@1\) with describeRuntimeConformance: 4 passed$/m);
  }, 120_000);

  it("runs the telemetry-sink kit for a package's sinks: the OTLP sink passes against its OTLP/JSON receiver", async () => {
    const { code, out } = await plugins("verify", join(root, "plugins/otlp"));
    expect(code).toBe(0);
    expect(out).toMatch(/pass {2}exports: the package main exports createOtlpSink\(\)/);
    expect(out).toMatch(/pass {2}conformance telemetry-sink "otlp" \(telemetry@1\) with describeTelemetrySinkConformance: 5 passed$/m);
  }, 120_000);

  it("runs the harness kit for a package's engines: Pi passes against its OpenAI protocol server", async () => {
    const { code, out } = await plugins("verify", join(root, "plugins/pi"));
    expect(code).toBe(0);
    expect(out).toMatch(/pass {2}conformance harness "pi" \(harness@1\) with describeHarnessConformance: 7 passed$/m);
  }, 120_000);

  it.skipIf(!codexRuns().ok)("runs the harness kit on the Codex engine: it passes on the real app-server", async () => {
    const { code, out } = await plugins("verify", join(root, "plugins/codex"));
    expect(code).toBe(0);
    expect(out).toMatch(/pass {2}conformance harness "codex" \(harness@1\) with describeHarnessConformance: 7 passed$/m);
  }, 180_000);

  it("runs the harness kit for a package's engines, and names the test an engine that ignores abort fails", async () => {
    const engine = await mkdtemp(join(tmpdir(), "al-verify-engine-"));
    folders.push(engine);
    await writeFile(join(engine, "package.json"), JSON.stringify({
      name: "@acme/echo-engine", version: "1.0.0", type: "module", main: "./index.js", exports: { ".": "./index.js", "./testkit": "./testkit.js" },
      assemblyLine: { manifestVersion: 1, id: "echo-engine", kernel: "^0.1.0", provides: [], harnesses: [{ name: "echo", export: "echoHarness", contract: "harness@1", conformance: { module: "./testkit", export: "subject" } }] },
    }));
    // A queue-driven engine with no model server: it streams, calls tools, pauses and resumes, but never looks at ctx.signal.
    await writeFile(join(engine, "index.js"), [
      "export function echoHarness(model) {",
      "  return { name: 'echo', async runTurn(input, ctx) {",
      "    if (input.continuation && (input.continuation.harness !== 'echo' || input.continuation.version !== 1)) throw new Error('not my continuation');",
      "    const pending = input.continuation?.data.pending;",
      "    if (pending) { const outcome = await ctx.callTool(pending); if (outcome.status === 'paused') return { status: 'paused', continuation: input.continuation }; model.saw(JSON.stringify(outcome.output)); }",
      "    for (;;) {",
      "      const reply = await model.next(input, pending);",
      "      if (reply.text !== undefined) { ctx.textDelta(reply.text); return { status: 'completed', response: { text: reply.text } }; }",
      "      const call = { id: reply.toolCall.id, name: reply.toolCall.name, input: reply.toolCall.input };",
      "      const outcome = await ctx.callTool(call);",
      "      if (outcome.status === 'paused') return { status: 'paused', continuation: { version: 1, harness: 'echo', agentRevision: input.agentRevision, data: { pending: call } } };",
      "      model.saw(JSON.stringify(outcome.output));",
      "    }",
      "  } };",
      "}",
    ].join("\n"));
    await writeFile(join(engine, "testkit.js"), [
      "import { echoHarness } from './index.js';",
      "export const subject = () => {",
      "  const queue = []; const requests = []; let seen = '';",
      "  const model = {",
      "    async next(input) { requests.push(JSON.stringify({ input, seen })); const reply = queue.shift(); if (!reply || reply.hang) return new Promise(() => {}); return reply; },",
      "    saw(output) { seen += output; },",
      "  };",
      "  return { state: { harness: echoHarness(model), modelSpec: 'echo/one', reply: (...r) => queue.push(...r), requests: () => requests } };",
      "};",
    ].join("\n"));
    const { code, out } = await plugins("verify", engine);
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}conformance harness "echo" \(harness@1\) with describeHarnessConformance: \d+ passed, 3 failed/);
    expect(out).toMatch(/- .*AgentHarness conformance > ends the turn when the run's signal aborts while the model is answering: /);
    expect(out).toMatch(/- .*AgentHarness conformance > asks the model nothing when the run's signal aborted before the turn: /);
    expect(out).toMatch(/- .*AgentHarness conformance > asks the model nothing more when the run is cancelled while a resumed turn's open call runs: /);
  }, 120_000);

  it("fails a package whose published tarball would leave out its config schema, while the kit still runs", async () => {
    const leaky = await mkdtemp(join(tmpdir(), "al-verify-files-"));
    folders.push(leaky);
    // Loads fine from its folder; "files" ships only index.js, so an installed copy has no config.schema.json.
    await writeFile(join(leaky, "package.json"), JSON.stringify({
      name: "@acme/leaky", version: "1.0.0", type: "module", main: "./index.js", files: ["index.js"],
      assemblyLine: { manifestVersion: 1, id: "leaky", kernel: "^0.1.0", configSchema: "./config.schema.json", provides: [{ slot: "state", name: "leaky", export: "leakyState", contract: "state@1", facets: ["runs"] }] },
    }));
    await writeFile(join(leaky, "config.schema.json"), JSON.stringify({ type: "object", additionalProperties: false, properties: {} }));
    await writeFile(join(leaky, "index.js"), [
      'import { adapterDescriptor, definePlugin } from "@assemblyline-agents/core";',
      `import { JsonFileState } from ${JSON.stringify(join(thirdParty, "src/json-file-state.js"))};`,
      'export const leakyState = (options = {}) => adapterDescriptor("state", "leaky", options);',
      'export const plugin = definePlugin({ name: "leaky", version: "1.0.0", apply(kernel) {',
      '  kernel.hooks.slot.for("state").tapPromise("leaky", async (d, ctx) => d.plugin === "leaky" ? JsonFileState.open({ file: `${ctx.agentDir}/s.json` }) : undefined);',
      "} });",
    ].join("\n"));
    const { code, out, err } = await plugins("verify", leaky);
    expect(code).toBe(1);
    expect(out).toMatch(/FAIL {2}published files: AL_ERR_PLUGIN_CONFIG_SCHEMA: plugin leaky@1\.0\.0 .*without config\.schema\.json \(the configSchema of the state adapter "leaky"\)/);
    expect(out).toContain('fix: Add "config.schema.json" (or its folder) to "files" in package.json');
    expect(out).toMatch(/pass {2}conformance state "leaky" \(state@1\) with describeStateConformance: \d+ passed$/m);
    expect(err).toContain("verify failed: @acme/leaky@1.0.0 (plugin leaky), 1 problem(s) above");
  });

  it("fails a package whose published tarball would leave out a file its main module imports, naming the file and the files fix", async () => {
    const cut = await mkdtemp(join(tmpdir(), "al-verify-cut-files-"));
    folders.push(cut);
    await cp(thirdParty, cut, { recursive: true, filter: (source) => !source.includes("node_modules") });
    // src/index.js imports ./json-file-state.js, which this "files" list leaves out: the folder loads, the installed tarball does not.
    const packageJson = JSON.parse(await readFile(join(cut, "package.json"), "utf8")) as { files: string[] };
    packageJson.files = ["src/index.js", "src/index.d.ts", "config.schema.json"];
    await writeFile(join(cut, "package.json"), JSON.stringify(packageJson, null, 2));
    const { code, out, err } = await plugins("verify", cut);
    expect(code).toBe(1);
    expect(out).toMatch(/pass {2}exports: /);
    expect(out).toMatch(/FAIL {2}published files: AL_ERR_PLUGIN_IMPORT: plugin jsonfile@0\.3\.0 .*without src\/json-file-state\.js, which src\/index\.js \(the main module\) imports/);
    expect(out).toContain('fix: Add "src/json-file-state.js" (or its folder) to "files" in package.json');
    expect(err).toContain("verify failed");
  });

  it("fails a package whose main imports a package missing from dependencies, naming it and where to declare it", async () => {
    // The helper sits in a node_modules above the plugin (a monorepo's hoisting), so the folder imports
    // fine; package.json does not declare it, so `npm install @acme/tools-plugin` does not install it.
    const workspace = await mkdtemp(join(tmpdir(), "al-verify-undeclared-"));
    folders.push(workspace);
    const helper = join(workspace, "node_modules", "undeclared-helper");
    await mkdir(helper, { recursive: true });
    await writeFile(join(helper, "package.json"), JSON.stringify({ name: "undeclared-helper", version: "1.0.0", type: "module", main: "./index.js" }));
    await writeFile(join(helper, "index.js"), "export const greet = () => 'hi';\n");
    const plugin = join(workspace, "plugin");
    await mkdir(plugin);
    await writeFile(join(plugin, "package.json"), JSON.stringify({
      name: "@acme/tools-plugin", version: "1.0.0", type: "module", main: "./index.js", files: ["index.js"],
      peerDependencies: { "@assemblyline-agents/core": "^0.1.0" },
      assemblyLine: { manifestVersion: 1, id: "tools-plugin", kernel: "^0.1.0", provides: [] },
    }));
    await writeFile(join(plugin, "index.js"), [
      'import { definePlugin } from "@assemblyline-agents/core";',
      'import { greet } from "undeclared-helper/greet.js";',
      'export const plugin = definePlugin({ name: "tools-plugin", version: "1.0.0", apply() { void greet; } });',
    ].join("\n"));
    await writeFile(join(helper, "greet.js"), "export const greet = () => 'hi';\n");
    const { code, out, err } = await plugins("verify", plugin);
    expect(code).toBe(1);
    expect(out).toMatch(/pass {2}exports: /);
    expect(out).toMatch(/FAIL {2}published files: AL_ERR_PLUGIN_IMPORT: plugin tools-plugin@1\.0\.0 .*index\.js \(the main module\) imports the package "undeclared-helper", which package\.json does not declare/);
    expect(out).toContain('fix: Add "undeclared-helper" to "dependencies" in package.json (or to "peerDependencies" when the host provides it)');
    expect(err).toContain("verify failed");

    // Declared, the same folder is ready to publish.
    const packageJson = JSON.parse(await readFile(join(plugin, "package.json"), "utf8")) as Record<string, unknown>;
    await writeFile(join(plugin, "package.json"), JSON.stringify({ ...packageJson, dependencies: { "undeclared-helper": "^1.0.0" } }));
    const declared = await plugins("verify", plugin);
    expect(declared.out).toMatch(/pass {2}published files: npm pack would ship index\.js$/m);
    expect(declared.code).toBe(0);
  });

  it("fails a package whose published tarball would leave out its kit subject module, or a file that module imports", async () => {
    const engine = await mkdtemp(join(tmpdir(), "al-verify-subject-files-"));
    folders.push(engine);
    const manifest = (files: string[]) => JSON.stringify({
      name: "@acme/packed-engine", version: "1.0.0", type: "module", main: "./index.js", exports: { ".": "./index.js", "./testkit": "./testkit.js" }, files,
      assemblyLine: { manifestVersion: 1, id: "packed-engine", kernel: "^0.1.0", provides: [], harnesses: [{ name: "packed", export: "packedHarness", contract: "harness@1", conformance: { module: "./testkit", export: "subject" } }] },
    });
    await writeFile(join(engine, "index.js"), "export const packedHarness = () => ({ name: 'packed', async runTurn() { return { status: 'completed', response: { text: 'hi' } }; } });\n");
    await writeFile(join(engine, "testkit.js"), "import { packedHarness } from './index.js';\nimport { scriptedModel } from './scripted-model.js';\nexport const subject = () => ({ state: { harness: packedHarness(scriptedModel), modelSpec: 'packed/one', reply: () => {}, requests: () => [] } });\n");
    await writeFile(join(engine, "scripted-model.js"), "export const scriptedModel = {};\n");

    await writeFile(join(engine, "package.json"), manifest(["index.js"]));
    const withoutModule = await plugins("verify", engine);
    expect(withoutModule.code).toBe(1);
    expect(withoutModule.out).toMatch(/FAIL {2}published files: AL_ERR_PLUGIN_IMPORT: plugin packed-engine@1\.0\.0 .*without testkit\.js \(the kit subject module "\.\/testkit" \(assemblyLine\.harnesses\[0\]\.conformance\)\)/);

    await writeFile(join(engine, "package.json"), manifest(["index.js", "testkit.js"]));
    const withoutImport = await plugins("verify", engine);
    expect(withoutImport.code).toBe(1);
    expect(withoutImport.out).toMatch(/FAIL {2}published files: AL_ERR_PLUGIN_IMPORT: .*without scripted-model\.js, which testkit\.js \(the kit subject module "\.\/testkit" \(assemblyLine\.harnesses\[0\]\.conformance\)\) imports/);
    expect(withoutImport.out).toContain('fix: Add "scripted-model.js" (or its folder) to "files" in package.json');
  }, 180_000);

  it("prints the report as JSON with --json", async () => {
    const { code, out } = await plugins("verify", fixture("missing-facet-method"), "--json");
    expect(code).toBe(1);
    const report = (JSON.parse(out) as { ok: true; data: { ok: boolean; steps: Array<{ step: string; ok: boolean; code?: string }> } }).data;
    expect(report.ok).toBe(false);
    expect(report.steps.at(-1)).toMatchObject({ step: "options and live contracts", ok: false, code: "AL_ERR_PLUGIN_CONTRACT" });
  });
});

describe("assembly-line plugins add", () => {
  it("installs a plugin tarball with npm, checks it fits this kernel and prints the gateway.ts lines", async () => {
    const work = await mkdtemp(join(tmpdir(), "al-add-"));
    folders.push(work);
    // npm pack is what a publisher's release makes; --offline keeps npm off the network.
    await promisify(execFile)("npm", ["pack", thirdParty, "--pack-destination", work, "--silent"], { cwd: work });
    const project = join(work, "project");
    await promisify(execFile)("mkdir", [project]);
    // The peer dependency, satisfied from this checkout rather than a registry.
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "project", private: true, dependencies: { "@assemblyline-agents/core": `file:${join(root, "plugin-sdk")}` } }));

    const { code, out } = await plugins("add", join(work, "acme-assembly-line-jsonfile-0.3.0.tgz"), "--dir", project, "--offline");
    expect(code).toBe(0);
    expect(out).toContain(`added @acme/assembly-line-jsonfile@0.3.0: plugin "jsonfile", kernel ^0.1.0 includes ${KERNEL_VERSION}`);
    expect(out).toContain('provides state "jsonfile" (state@1) via jsonFileState()');
    expect(out).toContain('import { jsonFileState } from "@acme/assembly-line-jsonfile";');
    expect(out).toContain("state: jsonFileState(),");
    const saved = JSON.parse(await readFile(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(saved.dependencies["@acme/assembly-line-jsonfile"]).toMatch(/acme-assembly-line-jsonfile-0\.3\.0\.tgz$/);
  });

  /** A project that already has a dependency installed, and a snapshot of its package.json and node_modules. */
  async function projectWithDependency() {
    const project = await mkdtemp(join(tmpdir(), "al-add-"));
    folders.push(project);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "project", private: true, dependencies: { "left-pad-local": "file:./vendor/left-pad-local" } }, null, 2));
    await mkdir(join(project, "vendor/left-pad-local"), { recursive: true });
    await writeFile(join(project, "vendor/left-pad-local/package.json"), JSON.stringify({ name: "left-pad-local", version: "1.0.0" }));
    await promisify(execFile)("npm", ["install", "--offline", "--no-audit", "--no-fund"], { cwd: project });
    const snapshot = async () => ({
      packageJson: await readFile(join(project, "package.json"), "utf8"),
      lock: await readFile(join(project, "package-lock.json"), "utf8"),
      nodeModules: (await readdir(join(project, "node_modules"), { recursive: true })).sort(),
    });
    return { project, before: await snapshot(), snapshot };
  }

  async function packFixture(name: string): Promise<string> {
    const work = await mkdtemp(join(tmpdir(), "al-add-pack-"));
    folders.push(work);
    const { stdout } = await promisify(execFile)("npm", ["pack", fixture(name), "--pack-destination", work, "--json", "--ignore-scripts"], { cwd: work });
    return join(work, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
  }

  it("refuses a tarball built for another kernel before installing it, naming the fix, and leaves the project as it was", async () => {
    const { project, before, snapshot } = await projectWithDependency();
    const tarball = await packFixture("wrong-kernel-range");
    const refusal = await plugins("add", tarball, "--dir", project, "--offline").catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_PLUGIN_KERNEL_MISMATCH" });
    const message = (refusal as Error).message;
    expect(message).toContain('assemblyLine.kernel "^2.0.0" does not include the running kernel');
    expect(message).toContain("Nothing was installed");
    expect(message).toContain(`fix: Install a release of @acme/assembly-line-jsonfile built for kernel ${KERNEL_VERSION}`);
    expect(await snapshot()).toEqual(before);
  });

  it("refuses a tarball whose range on @assemblyline-agents/core excludes the host's core before npm install, naming the range, and leaves the project as it was", async () => {
    const { project, before, snapshot } = await projectWithDependency();
    // Its kernel range (^0.1.0) fits; its peer range on the SDK (^0.3.0) does not, which npm would refuse with ERESOLVE.
    const tarball = await packFixture("core-peer-range-excludes-host");
    const refusal = await plugins("add", tarball, "--dir", project, "--offline").catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_PLUGIN_KERNEL_MISMATCH" });
    const message = (refusal as Error).message;
    expect(message).toContain('peerDependencies["@assemblyline-agents/core"] "^0.3.0" does not include the host\'s @assemblyline-agents/core');
    expect(message).toContain("Nothing was installed");
    expect(message).not.toContain("ERESOLVE");
    expect(await snapshot()).toEqual(before);
  });

  it("refuses a tarball whose manifest fails the schema before installing it, naming the key, and leaves the project as it was", async () => {
    const { project, before, snapshot } = await projectWithDependency();
    const tarball = await packFixture("unknown-manifest-key");
    const refusal = await plugins("add", tarball, "--dir", project, "--offline").catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST" });
    expect((refusal as Error).message).toContain("slots");
    expect((refusal as Error).message).toContain("Nothing was installed");
    expect((refusal as Error).message).toMatch(/\n {2}fix: /);
    expect(await snapshot()).toEqual(before);
  });

  it("refuses a package folder built for another kernel before installing it", async () => {
    const { project, before, snapshot } = await projectWithDependency();
    await expect(plugins("add", fixture("wrong-kernel-range"), "--dir", project, "--offline")).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_KERNEL_MISMATCH" });
    expect(await snapshot()).toEqual(before);
  });

  it("puts package.json, the lock file and node_modules back when the installed package does not load", async () => {
    const { project, before, snapshot } = await projectWithDependency();
    // Manifest and kernel range pass the check before npm install; the main lacks the export the manifest names.
    const plugin = await mkdtemp(join(tmpdir(), "al-add-plugin-"));
    folders.push(plugin);
    await writeFile(join(plugin, "index.js"), "export const somethingElse = 1;\n");
    await writeFile(
      join(plugin, "package.json"),
      JSON.stringify({
        name: "@acme/no-exports",
        version: "1.0.0",
        type: "module",
        main: "./index.js",
        assemblyLine: { manifestVersion: 1, id: "no-exports", kernel: `^${KERNEL_VERSION}`, provides: [{ slot: "blob", name: "no-exports", export: "noExportsBlob", contract: "blob@1" }] },
      }),
    );
    const refusal = await plugins("add", plugin, "--dir", project, "--offline").catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_PLUGIN_EXPORT", details: { restored: true } });
    expect((refusal as Error).message).toContain("Nothing was kept");
    expect((refusal as Error).message).toContain("no `plugin` export");
    expect(await snapshot()).toEqual(before);
  });

  it("fails with AL_ERR_PLUGIN_INSTALL quoting npm when the package cannot be installed", async () => {
    const project = await mkdtemp(join(tmpdir(), "al-add-"));
    folders.push(project);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "project", private: true }));
    await expect(plugins("add", join(project, "missing.tgz"), "--dir", project, "--offline")).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_INSTALL" });
  });

  it("refuses a project whose package.json is not valid JSON before fetching or installing anything, quoting the parser, and changes nothing", async () => {
    const project = await mkdtemp(join(tmpdir(), "al-add-"));
    folders.push(project);
    const broken = '{ "name": "proj2", \n';
    await writeFile(join(project, "package.json"), broken);
    const parserMessage = (() => {
      try {
        JSON.parse(broken);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error("the fixture parsed");
    })();
    // A registry id that does not exist: the project's package.json is checked before the registry is read.
    await expect(plugins("add", "no-such-plugin", "--dir", project, "--offline")).rejects.toMatchObject({
      code: "AL_ERR_CLI_USAGE",
      message: expect.stringContaining(`${join(project, "package.json")} is not valid JSON: ${parserMessage}`),
    });
    await expect(plugins("add", thirdParty, "--dir", project, "--offline")).rejects.toMatchObject({ code: "AL_ERR_CLI_USAGE", message: expect.stringContaining("is not valid JSON") });
    expect(await readdir(project)).toEqual(["package.json"]);
    expect(await readFile(join(project, "package.json"), "utf8")).toBe(broken);
  });

  describe("a bare word is a registry id, even where a folder of that name exists", () => {
    const cwd = process.cwd();
    /** Runs `plugins add <args>` from inside `project`, as a user does, and returns what it said or threw. */
    async function addFrom(project: string, ...args: string[]) {
      process.chdir(project);
      try {
        const outcome = await plugins("add", ...args, "--offline").then(
          (result) => ({ ...result, error: undefined }),
          (error: { code?: string; message: string; fix?: string }) => ({ code: undefined, out: "", err: "", error }),
        );
        return { ...outcome, said: `${outcome.error?.message ?? ""}\n${outcome.out}\n${outcome.err}` };
      } finally {
        process.chdir(cwd);
      }
    }
    async function projectWith(folder: string): Promise<string> {
      const project = await mkdtemp(join(tmpdir(), "al-add-shadow-"));
      folders.push(project);
      await writeFile(join(project, "package.json"), JSON.stringify({ name: "my-agent", version: "1.0.0", private: true }));
      // Many projects keep a docker/ (or postgres/) folder of compose files or data.
      await mkdir(join(project, folder));
      await writeFile(join(project, folder, "compose.yaml"), "services: {}\n");
      return project;
    }

    it("installs the registry's docker plugin, not the project's docker/ folder", async () => {
      const { said } = await addFrom(await projectWith("docker"), "docker");
      // Offline npm may not have it; either way the command is about @assemblyline-agents/docker, not ./docker.
      expect(said).not.toMatch(/docker[\\/]package\.json does not exist/);
      expect(said).toContain("@assemblyline-agents/docker");
    });

    it("reads ./docker as the folder", async () => {
      const { error } = await addFrom(await projectWith("docker"), "./docker");
      expect(error).toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST", message: expect.stringMatching(/docker[\\/]package\.json does not exist/) });
    });

    it("refuses a bare word the registry does not list, saying to write a folder as ./<name>", async () => {
      const { error } = await addFrom(await projectWith("my-plugin"), "my-plugin");
      expect(error).toMatchObject({
        code: "AL_ERR_PLUGIN_NOT_FOUND",
        message: expect.stringContaining('the registry lists no plugin "my-plugin"'),
        fix: expect.stringContaining("assembly-line plugins add ./my-plugin"),
      });
    });
  });

  it("refuses a folder without package.json", async () => {
    const empty = await mkdtemp(join(tmpdir(), "al-add-"));
    folders.push(empty);
    await expect(plugins("add", "local", "--dir", empty)).rejects.toMatchObject({ code: "AL_ERR_CLI_USAGE" });
  });
});
