import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough, type Readable } from "node:stream";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { DockerDeployTarget } from "@assemblyline-agents/docker";
import { recordingLogger } from "../plugins/docker/test/support/recording-logger.js";

const REPO = resolve(import.meta.dirname, "..");

/**
 * An engine that has every image, builds instantly, and runs a "container" as an HTTP server
 * answering /readyz on the HOST and PORT of its environment, as the release's host does: the
 * deploy's URL must reach it there. Keeps each createContainer call's options.
 */
function fakeEngine(): { docker: Docker; created: Docker.ContainerCreateOptions[]; stop(): Promise<void> } {
  const created: Docker.ContainerCreateOptions[] = [];
  const servers: Server[] = [];
  const docker = {
    getImage: () => ({ inspect: async () => ({}) }),
    buildImage: async (context: Readable) => {
      // Read whole, as an engine would, before the deploy removes the folder it packs.
      for await (const _chunk of context);
      const stream = new PassThrough();
      stream.end();
      return stream;
    },
    modem: { followProgress: (_stream: unknown, done: (error: Error | null, results: unknown[]) => void) => done(null, []) },
    listContainers: async () => [],
    listImages: async () => [],
    createContainer: async (options: Docker.ContainerCreateOptions) => {
      created.push(options);
      const env = (name: string) => options.Env?.find((entry) => entry.startsWith(`${name}=`))?.slice(name.length + 1);
      let server: Server | undefined;
      return {
        id: options.name,
        start: async () => {
          server = createServer((request, response) => response.writeHead(request.url === "/readyz" ? 200 : 404).end());
          servers.push(server);
          await new Promise<void>((listening, failed) => server!.once("error", failed).listen(Number(env("PORT")), env("HOST"), listening));
        },
        inspect: async () => ({ Config: { Env: options.Env }, HostConfig: options.HostConfig, NetworkSettings: { Ports: {} }, State: { Running: true, Restarting: false }, RestartCount: 0 }),
        logs: async () => Buffer.alloc(0),
        remove: async () => void server?.close(),
      };
    },
  } as unknown as Docker;
  return { docker, created, stop: async () => void (await Promise.all(servers.map((server) => new Promise((closed) => server.close(closed))))) };
}

describe("dockerDeploy on the host network", () => {
  let root: string;
  let artifactRoot: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "al-docker-host-network-"));
    const agentDir = join(root, "agent");
    mkdirSync(agentDir);
    writeFileSync(join(agentDir, "package.json"), JSON.stringify({ name: "host-network-agent", private: true, type: "module" }));
    writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "host-network-agent", model: "openai/gpt-4o-mini", instructions: "hi" });\n`);
    symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
    ({ artifactRoot } = await buildAgent(agentDir));
  }, 120_000);

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it.each([
    ["127.0.0.2", "127.0.0.2", "127.0.0.2"],
    // Every interface: the URL reaches it on loopback.
    ["0.0.0.0", "0.0.0.0", "127.0.0.1"],
    [undefined, "127.0.0.1", "127.0.0.1"],
  ])("with hostIp %s the release listens on %s and the URL names %s", async (hostIp, listens, named) => {
    const engine = fakeEngine();
    onTestFinished(() => engine.stop());
    const target = new DockerDeployTarget({ network: "host", readyTimeoutMs: 30_000, ...(hostIp ? { hostIp } : {}) }, engine.docker, recordingLogger());
    const result = await target.deploy({ artifactRoot, env: {} });
    expect(engine.created).toHaveLength(1);
    const env = engine.created[0]!.Env!;
    expect(env).toContain(`HOST=${listens}`);
    const port = env.find((entry) => entry.startsWith("PORT="))!.slice("PORT=".length);
    expect(result.url).toBe(`http://${named}:${port}`);
    expect(engine.created[0]!.HostConfig?.PortBindings).toBeUndefined();
  }, 120_000);

  it("refuses a hostIp that is no address of this machine with AL_ERR_DEPLOY_CONFIG before any container is made", async () => {
    const engine = fakeEngine();
    onTestFinished(() => engine.stop());
    const target = new DockerDeployTarget({ network: "host", hostIp: "192.0.2.1" }, engine.docker, recordingLogger());
    const error = await target.deploy({ artifactRoot, env: {} }).then(
      () => new Error("deployed"),
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining('dockerDeploy hostIp "192.0.2.1" is no address of this machine') });
    expect(engine.created).toEqual([]);
  }, 120_000);
});
