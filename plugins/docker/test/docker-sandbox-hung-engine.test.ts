import { isAssemblyLineError } from "@assemblyline-agents/core";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { DockerSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";
import { startFreezableEngineProxy } from "./support/freezable-engine-proxy.js";

const probe = await probeEngine("DockerSandboxAdapter with a hung engine");

/** How the call ended, or "still pending" once `ceilingMs` passes: a generous bound, never a measured duration. */
async function settleWithin(promise: Promise<unknown>, ceilingMs: number): Promise<{ value: unknown } | { error: unknown } | "still pending"> {
  let timer: NodeJS.Timeout | undefined;
  const ceiling = new Promise<"still pending">((resolve) => (timer = setTimeout(() => resolve("still pending"), ceilingMs)));
  try {
    return await Promise.race([promise.then((value) => ({ value }), (error: unknown) => ({ error })), ceiling]);
  } finally {
    clearTimeout(timer);
  }
}

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scopes: string[] = [];
  afterAll(async () => {
    for (const scope of scopes) await removeScope(docker, scope);
  });

  describe("DockerSandboxAdapter when the engine hangs during a command", () => {
    it("fails a timed-out command with AL_ERR_SANDBOX_ENGINE once the engine does not answer the kill in engineTimeoutMs, instead of holding the call forever", async () => {
      const scope = randomScope("hung");
      scopes.push(scope);
      const proxy = await startFreezableEngineProxy();
      try {
        const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, socketPath: proxy.socketPath, engineTimeoutMs: 2_000 });
        const sandbox = await adapter.acquire("run-hung-engine");
        // The engine stops answering once the command runs: its stream never ends and the kill's exec is never answered.
        proxy.freezeWhenEngineSends("command-is-running");
        const outcome = await settleWithin(sandbox.exec("echo command-is-running; sleep 30", { timeoutMs: 3_000 }), 60_000);
        expect(outcome).not.toBe("still pending");
        const error = (outcome as { error?: unknown }).error;
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error ?? JSON.stringify(outcome))).toBe(true);
        expect(String(error)).toContain("did not answer the call to stop it within 2000 ms");
        expect(String(error)).toContain("may still be running");
      } finally {
        await proxy.close();
        await removeScope(docker, scope);
      }
    }, 90_000);
  });

  describe("DockerSandboxAdapter snapshot calls when the engine hangs", () => {
    /** A snapshotting adapter through a proxy that stops answering at the first request holding `request`, once the key has a snapshot. */
    async function hungAt(request: (snapshotId: string) => string) {
      const scope = randomScope("hung-snap");
      scopes.push(scope);
      const proxy = await startFreezableEngineProxy();
      onTestFinished(() => proxy.close());
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, socketPath: proxy.socketPath, engineTimeoutMs: 1_000, snapshot: { mode: "manual" } });
      await adapter.acquire("run-hung-snapshot");
      const { id } = await adapter.snapshot("run-hung-snapshot");
      proxy.freezeWhenClientSends(request(id));
      return adapter;
    }

    it("fails listSnapshots with AL_ERR_SANDBOX_ENGINE when the engine does not answer a snapshot's inspect in engineTimeoutMs", async () => {
      const adapter = await hungAt((id) => `:${id}/json`);
      const outcome = await settleWithin(adapter.listSnapshots("run-hung-snapshot"), 30_000);
      expect(outcome).not.toBe("still pending");
      const error = (outcome as { error?: unknown }).error;
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error ?? JSON.stringify(outcome))).toBe(true);
      expect(String(error)).toContain("inspecting snapshot");
      expect(String(error)).toContain("did not answer within 1000 ms");
    }, 60_000);

    it("fails a snapshot with AL_ERR_SANDBOX_ENGINE when the engine does not answer the commit in ten times engineTimeoutMs", async () => {
      const adapter = await hungAt(() => "/commit?");
      const outcome = await settleWithin(adapter.snapshot("run-hung-snapshot"), 40_000);
      expect(outcome).not.toBe("still pending");
      const error = (outcome as { error?: unknown }).error;
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error ?? JSON.stringify(outcome))).toBe(true);
      expect(String(error)).toContain("snapshotting sandbox run-hung-snapshot did not answer within 10000 ms");
    }, 60_000);
  });
}
