import { cpSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { adapter, defineGateway, isAssemblyLineError } from "@assemblyline-agents/core";
import { composeGateway } from "@assemblyline-agents/registry";
import { kernelHost } from "@assemblyline-agents/runtime";
import { devCommand } from "../src/cli/commands/serve.js";
import { listenAddress } from "../src/cli/listen-address.js";
import { nodeRuntime, plugin } from "../src/plugin.js";
import { tempDir } from "./support/host.js";

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");
const repoModules = resolve(import.meta.dirname, "../../../node_modules");

/** A copy of the notes example outside the repo that resolves the workspace's packages, with this gateway.ts. */
function agentWithGateway(gateway: string): { agentDir: string; script: string } {
  const root = tempDir("al-node-runtime-");
  const agentDir = join(root, "agent");
  cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
  symlinkSync(repoModules, join(root, "node_modules"));
  writeFileSync(join(agentDir, "gateway.ts"), gateway);
  return { agentDir, script: join(agentDir, "conversations/remember-milk.json") };
}

function gatewayWith(runtime: string): string {
  return `import { adapter, defineGateway } from "@assemblyline-agents/core";\nimport { nodeRuntime } from "@assemblyline-agents/node";\nexport default defineGateway({ runtime: ${runtime} });\n`;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** Where `assembly-line dev <args>` listens (it is shut down at once). */
async function devListensOn(args: string[]): Promise<URL> {
  let url: string | undefined;
  await devCommand(args, { out: () => undefined, err: () => undefined }, {
    installSignals: false,
    onListening: (handle) => {
      url = handle.url;
      void handle.shutdown({ timeoutMs: 1_000 });
    },
  });
  return new URL(url!);
}

const saved = { PORT: process.env.PORT, HOST: process.env.HOST };
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});
function setEnv(values: { PORT?: string; HOST?: string }): void {
  delete process.env.PORT;
  delete process.env.HOST;
  Object.assign(process.env, values);
}

describe("nodeRuntime({ port, host }) in gateway.ts", () => {
  it("is where `assembly-line dev` listens when neither --port nor PORT says", async () => {
    const port = await freePort();
    const { agentDir, script } = agentWithGateway(gatewayWith(`nodeRuntime({ port: ${port}, host: "127.0.0.1" })`));
    setEnv({});
    expect((await devListensOn([agentDir, "--offline-script", script])).port).toBe(String(port));
  }, 60_000);

  it("gives way to PORT, and --port wins over both", async () => {
    const [gatewayPort, envPort] = [await freePort(), await freePort()];
    const { agentDir, script } = agentWithGateway(gatewayWith(`adapter("node", { port: ${gatewayPort} })`));
    setEnv({ PORT: String(envPort) });
    expect((await devListensOn([agentDir, "--offline-script", script])).port).toBe(String(envPort));
    const chosen = await devListensOn([agentDir, "--offline-script", script, "--port", "0"]);
    expect([String(gatewayPort), String(envPort)]).not.toContain(chosen.port);
  }, 60_000);

  it("refuses an option the node plugin does not have, through its config schema, before listening", async () => {
    const { agentDir, script } = agentWithGateway(gatewayWith(`adapter("node", { port: 8123, bogus: 1 })`));
    const error = await devListensOn([agentDir, "--offline-script", script]).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_OPTIONS")).toBe(true);
    expect((error as Error).message).toContain("config.schema.json");
    expect((error as Error).message).toContain("bogus");
  }, 60_000);

  it("the registry refuses a port that is not a port number against the plugin's config schema", async () => {
    const agentDir = agentWithGateway(gatewayWith("nodeRuntime()")).agentDir;
    const error = await composeGateway({ gateway: defineGateway({ runtime: adapter("node", { port: 70_000 }) }), agentDir, devMode: true }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_OPTIONS")).toBe(true);
    expect((error as Error).message).toContain("config.schema.json");
    expect((error as Error).message).toMatch(/port.*65535/);
  });
});

describe("the node plugin's runtime slot", () => {
  async function materialize(options: Record<string, unknown>) {
    const kernel = await kernelHost.createKernel({ plugins: [plugin] });
    return kernelHost.materializeSlot(kernel, adapter("node", options), { slot: "runtime", env: {}, devMode: true, agentDir: tempDir("al-node-runtime-") });
  }

  it("carries the listen options", async () => {
    expect(await materialize({ port: 8123, host: "0.0.0.0" })).toEqual({ name: "node", options: { port: 8123, host: "0.0.0.0" } });
  });

  it.each([
    [{ bogus: 1 }, /"bogus" is not an option/],
    [{ port: "8123" }, /options\.port must be integer/],
    [{ port: 65_536 }, /options\.port must be <= 65535/],
    [{ port: 80.5 }, /options\.port must be integer/],
    [{ host: "" }, /options\.host must NOT have fewer than 1 characters/],
    [{ host: 127 }, /options\.host must be string/],
  ])("refuses %j even when composed without the registry", async (options, message) => {
    const error = await materialize(options).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_OPTIONS")).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it("nodeRuntime() refuses bad options where gateway.ts calls it", () => {
    expect(() => nodeRuntime({ bogus: 1 } as never)).toThrow(/AL_ERR_PLUGIN_OPTIONS: nodeRuntime\(\) in gateway.ts \(the runtime slot\): "bogus" is not an option/);
    expect(() => nodeRuntime({ port: -1 })).toThrow(/options\.port must be >= 0/);
  });
});

describe("where dev and start listen", () => {
  const gateway = { port: 8123, host: "0.0.0.0" };
  it.each([
    ["the flag over everything", { port: 9000, host: "::1" }, { PORT: "7000", HOST: "10.0.0.1" }, { port: 9000, host: "::1" }],
    ["PORT / HOST over the gateway (left for listenNodeRuntime to read)", { port: undefined, host: undefined }, { PORT: "7000", HOST: "10.0.0.1" }, {}],
    ["the gateway when PORT / HOST are unset", { port: undefined, host: undefined }, {}, gateway],
    ["the gateway when PORT is blank and HOST empty, as listenNodeRuntime counts them", { port: undefined, host: undefined }, { PORT: " ", HOST: "" }, gateway],
  ])("%s", (_, flags, env, expected) => {
    expect(listenAddress(flags, env, gateway)).toEqual(expected);
  });

  it("falls to the host's default when nothing says", () => {
    expect(listenAddress({ port: undefined, host: undefined }, {}, {})).toEqual({});
  });
});

describe("assembly-line dev --host", () => {
  it("refuses an empty --host instead of ignoring it", async () => {
    const { agentDir } = agentWithGateway(gatewayWith("nodeRuntime()"));
    const error = await devListensOn([agentDir, "--host", ""]).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_CLI_USAGE")).toBe(true);
    expect((error as Error).message).toContain("--host is empty");
  });
});
