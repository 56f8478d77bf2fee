import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { adapter, adapterDescriptor, defineGateway, missingContractMethods, type RuntimeLogger } from "@assemblyline-agents/core";
import { OpenEveRuntime, buildAgent, loadRuntimeBundle, type Kernel } from "@assemblyline-agents/runtime";
import { composeGateway, type ComposedGateway } from "@assemblyline-agents/registry";

const root = resolve(import.meta.dirname, "../..");
const thirdParty = join(root, "examples/third-party-plugin");
const fixture = (name: string) => join(import.meta.dirname, "fixtures", name);
const jsonFileState = (options: Record<string, unknown> = {}) => adapterDescriptor("state", "jsonfile", options);
const vaultState = () => adapterDescriptor("state", "vault-state", {});

const folders: string[] = [];
const composed: ComposedGateway[] = [];
async function agentDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "al-compose-"));
  folders.push(dir);
  return dir;
}
afterEach(async () => {
  await Promise.all(composed.splice(0).map((gateway) => gateway.close()));
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});
async function compose(options: Parameters<typeof composeGateway>[0]): Promise<ComposedGateway> {
  const gateway = await composeGateway(options);
  composed.push(gateway);
  return gateway;
}

/** The plugins a composition applied: its kernel is the runtime's, the kernel host test/setup installs. */
const appliedPlugins = (gateway: ComposedGateway) => (gateway.kernel as Kernel).plugins;

function recordingLogger() {
  const warnings: Array<{ fields: Record<string, unknown>; msg?: string }> = [];
  const logger: RuntimeLogger = { debug() {}, info() {}, error() {}, warn: (fields, msg) => warnings.push({ fields, ...(msg ? { msg } : {}) }) };
  return { logger, warnings };
}

describe("composeGateway", () => {
  it("materializes installed first-party plugins beside the agent, one kernel for all", async () => {
    const dir = await agentDir();
    const { localBlob, localState } = await import("@assemblyline-agents/local");
    const result = await compose({ gateway: defineGateway({ state: localState(), blob: localBlob() }), agentDir: dir });
    expect(missingContractMethods(result.adapters.state, "state@1", ["runs", "conversations", "memory"])).toEqual([]);
    expect((result.adapters.state as { directory: string }).directory).toBe(join(dir, ".assembly-line", "state"));
    expect((result.adapters.blob as { directory: string }).directory).toBe(join(dir, ".assembly-line", "blobs"));
    expect(appliedPlugins(result).map((plugin) => plugin.name)).toEqual(["local"]);
    expect(result.slots.map((slot) => [slot.slot, slot.plugin.manifest.id, slot.provide.contract])).toEqual([
      ["state", "local", "state@1"],
      ["blob", "local", "blob@1"],
    ]);
  });

  it('resolves adapter("local") by the slot it sits in', async () => {
    const result = await compose({ gateway: defineGateway({ blob: adapter("local") }), agentDir: await agentDir() });
    expect(missingContractMethods(result.adapters.blob, "blob@1")).toEqual([]);
  });

  it("refuses sandbox.ts settings that gateway.ts's entry for the same sandbox would drop", async () => {
    const { localSandbox } = await import("@assemblyline-agents/local");
    const gateway = defineGateway({ sandbox: localSandbox({ defaultTimeoutMs: 5_000 }) });
    const sandbox = { adapter: "local", options: { workingDirectory: "/workspace", snapshot: { mode: "manual" } } };
    await expect(compose({ gateway, sandbox, agentDir: await agentDir() })).rejects.toThrow(
      /AL_ERR_SANDBOX_DEFINITION: sandbox\.ts and gateway\.ts's sandbox slot both configure the "local" sandbox: gateway\.ts's options would be used and sandbox\.ts's snapshot ignored/,
    );
    // Naming the same sandbox with nothing to drop is fine.
    await expect(compose({ gateway, sandbox: { adapter: "local", options: { workingDirectory: "/workspace" } }, agentDir: await agentDir() })).resolves.toBeDefined();
  });

  it("composes nothing for an agent without gateway.ts", async () => {
    const result = await compose({ gateway: null, agentDir: await agentDir() });
    expect(result.adapters).toEqual({});
    expect(appliedPlugins(result)).toEqual([]);
  });

  it("uses a plugin folder the host names, and the adapter persists beside the agent", async () => {
    const dir = await agentDir();
    const result = await compose({ gateway: defineGateway({ state: jsonFileState() }), agentDir: dir, plugins: [thirdParty] });
    const state = result.adapters.state as { createRun(run: object): Promise<unknown> };
    await state.createRun({ id: "run-1", agentId: "a", agentRevision: "r", modelSpec: "m", input: { message: "hi", metadata: {} } });
    const file = JSON.parse(await readFile(join(dir, ".assembly-line", "state.json"), "utf8")) as { runs: Record<string, unknown> };
    expect(Object.keys(file.runs)).toEqual(["run-1"]);
  });

  it("refuses a plugin id no installed package declares, saying how to install one", async () => {
    await expect(compose({ gateway: defineGateway({ state: adapter("dynamo") }), agentDir: await agentDir() })).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_NOT_FOUND",
      message: expect.stringContaining('gateway.ts state: no installed package declares the plugin id "dynamo"'),
      fix: expect.stringContaining("assembly-line plugins search state"),
    });
  });

  it("refuses a plugin in a slot it does not provide", async () => {
    await expect(compose({ gateway: defineGateway({ blob: adapter("jsonfile") }), agentDir: await agentDir(), plugins: [thirdParty] })).rejects.toMatchObject({
      code: "AL_ERR_GATEWAY_SLOT",
      message: expect.stringContaining("gateway.ts puts it in the blob slot, but it provides state"),
    });
  });

  it("refuses options that break the plugin's config schema before constructing the adapter", async () => {
    const dir = await agentDir();
    await expect(compose({ gateway: defineGateway({ state: jsonFileState({ file: 42 }) }), agentDir: dir, plugins: [thirdParty] })).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_OPTIONS",
      message: expect.stringContaining("options/file must be string"),
      fix: "Pass options that match the schema to jsonFileState(...) in gateway.ts.",
    });
  });

  it("points a misspelt sandbox.ts option at sandbox.ts, the file it was written in, when gateway.ts has no sandbox entry", async () => {
    // sandbox.ts: export default defineSandbox({ adapter: "docker", imagee: "node:22" }), as the build stamps it.
    const error = await compose({ gateway: undefined, sandbox: { adapter: "docker", options: { imagee: "node:22" } }, agentDir: await agentDir() }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: "AL_ERR_PLUGIN_OPTIONS",
      message: expect.stringMatching(/sandbox adapter "docker" \(from sandbox\.ts\) break .*imagee/),
      fix: 'Pass options that match the schema to the default export (dockerSandbox(...) or defineSandbox({ adapter: "docker", ... })) in sandbox.ts.',
      details: { file: "sandbox.ts" },
    });
  });

  it("refuses a plugin built for another kernel, and one whose live adapter lacks a claimed facet method", async () => {
    const gateway = defineGateway({ state: jsonFileState() });
    await expect(compose({ gateway, agentDir: await agentDir(), plugins: [fixture("wrong-kernel-range")] })).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_KERNEL_MISMATCH" });
    await expect(compose({ gateway, agentDir: await agentDir(), plugins: [fixture("missing-facet-method")] })).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_CONTRACT",
      message: expect.stringContaining("lacks conversations.listConversationMessages"),
    });
  });

  it("closes the adapters it already opened when a later slot's factory fails, then refuses the boot", async () => {
    const plugin = await agentDir();
    await writeFile(join(plugin, "package.json"), JSON.stringify({
      name: "@acme/two-slots", version: "1.0.0", type: "module", main: "./index.js",
      assemblyLine: {
        manifestVersion: 1, id: "two-slots", kernel: "^0.1.0",
        provides: [
          { slot: "state", name: "two-slots", export: "twoState", contract: "state@1", facets: ["runs"] },
          { slot: "blob", name: "two-slots", export: "twoBlob", contract: "blob@1" },
        ],
      },
    }));
    // The state adapter stands for a connection pool or a folder lock: opened for a boot that then fails.
    await writeFile(join(plugin, "index.js"), [
      'import { adapterDescriptor, definePlugin } from "@assemblyline-agents/core";',
      `import { InMemoryStateAdapter } from ${JSON.stringify(join(root, "kernel/dist/index.js"))};`,
      'export const twoState = (o = {}) => adapterDescriptor("state", "two-slots", o);',
      'export const twoBlob = (o = {}) => adapterDescriptor("blob", "two-slots", o);',
      "globalThis.__twoSlotsClosed = [];",
      'export const plugin = definePlugin({ name: "two-slots", version: "1.0.0", apply(kernel) {',
      '  kernel.hooks.slot.for("state").tapPromise("two-slots", async (d) => d.plugin === "two-slots" ? Object.assign(new InMemoryStateAdapter(), { close: async () => { globalThis.__twoSlotsClosed.push("state"); } }) : undefined);',
      '  kernel.hooks.slot.for("blob").tapPromise("two-slots", async (d) => { if (d.plugin === "two-slots") throw new Error("blob bucket unreachable"); });',
      "} });",
    ].join("\n"));
    const gateway = defineGateway({ state: adapterDescriptor("state", "two-slots", {}), blob: adapterDescriptor("blob", "two-slots", {}) });
    await expect(compose({ gateway, agentDir: await agentDir(), plugins: [plugin] })).rejects.toThrow(/blob bucket unreachable/);
    // The caller got no handle to close it with, so composeGateway must have.
    expect((globalThis as { __twoSlotsClosed?: string[] }).__twoSlotsClosed).toEqual(["state"]);
  });

  it("refuses two different packages that declare the same plugin id", async () => {
    const impostor = await agentDir();
    const manifest = JSON.parse(await readFile(join(thirdParty, "package.json"), "utf8")) as Record<string, unknown>;
    await writeFile(join(impostor, "package.json"), JSON.stringify({ ...manifest, name: "@evil/jsonfile" }));
    await expect(compose({ gateway: defineGateway({ state: jsonFileState() }), agentDir: await agentDir(), plugins: [thirdParty, impostor] })).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_DUPLICATE_ID",
      message: expect.stringContaining("@acme/assembly-line-jsonfile"),
    });
  });

  describe("the env its plugins require", () => {
    it("refuses a production boot listing every missing variable", async () => {
      const boot = compose({ gateway: defineGateway({ state: vaultState() }), agentDir: await agentDir(), plugins: [fixture("requires-env")], env: {} });
      await expect(boot).rejects.toMatchObject({
        code: "AL_ERR_GATEWAY_ENV",
        message: expect.stringContaining("VAULT_TOKEN (plugin vault-state, state), VAULT_REGION (plugin vault-state, state)"),
        fix: expect.stringContaining("Set VAULT_TOKEN, VAULT_REGION"),
      });
      await expect(boot).rejects.not.toMatchObject({ message: expect.stringContaining("VAULT_TRACE") });
    });

    it("boots in dev mode with a warning per missing variable", async () => {
      const { logger, warnings } = recordingLogger();
      const result = await compose({ gateway: defineGateway({ state: vaultState() }), agentDir: await agentDir(), plugins: [fixture("requires-env")], env: { VAULT_REGION: "eu" }, devMode: true, logger });
      expect(result.missingEnv.map((variable) => variable.name)).toEqual(["VAULT_TOKEN"]);
      expect(warnings).toEqual([{ fields: { variable: "VAULT_TOKEN", plugin: "vault-state", slots: ["state"] }, msg: "VAULT_TOKEN is not set; plugin vault-state requires it in production" }]);
      expect(result.adapters.state).toBeDefined();
    });

    it("boots in production when every required variable is set", async () => {
      const result = await compose({ gateway: defineGateway({ state: vaultState() }), agentDir: await agentDir(), plugins: [fixture("requires-env")], env: { VAULT_TOKEN: "t", VAULT_REGION: "eu" } });
      expect(result.missingEnv).toEqual([]);
    });
  });

  it("runs examples/gateway-agent on the third-party state plugin installed beside it", async () => {
    // A copy of the example with the plugin installed the way npm links a file: dependency.
    const dir = await agentDir();
    const example = join(root, "examples/gateway-agent");
    for (const entry of ["agent.ts", "gateway.ts", "tools", "conversations", "package.json"]) await cp(join(example, entry), join(dir, entry), { recursive: true });
    await mkdir(join(dir, "node_modules", "@acme"), { recursive: true });
    await symlink(thirdParty, join(dir, "node_modules", "@acme", "assembly-line-jsonfile"), "dir");

    const { artifactRoot } = await buildAgent(dir);
    const bundle = await loadRuntimeBundle(artifactRoot);
    const { adapters, kernel, close } = await composeGateway({ gateway: bundle.sourceBundle.gateway, agentDir: dir });
    const runtime = new OpenEveRuntime({ ...bundle, state: adapters.state as never, kernel, logger: recordingLogger().logger });
    const result = await runtime.run({ message: "Hi, I am Ada", model: `scripted:${join(dir, "conversations/greet-ada.json")}` });
    expect(result).toMatchObject({ status: "completed", response: { text: "Hello, Ada! Nice to meet you." } });
    await runtime.close();
    await close();

    const file = JSON.parse(await readFile(join(dir, ".assembly-line", "state.json"), "utf8")) as { runs: Record<string, { record: { status: string } }> };
    expect(file.runs[result.runId]?.record.status).toBe("completed");
  });
});
