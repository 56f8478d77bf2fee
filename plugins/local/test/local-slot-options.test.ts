import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { checkAdapterOptions, readPluginPackage } from "@assemblyline-agents/registry";
import { localDeploy, localSandbox, localScheduler } from "../src/index.js";

const LOCAL_DIR = resolve(import.meta.dirname, "..");

/** What the registry does with gateway.ts's descriptor for `slot` before anything is constructed. */
async function check(slot: "sandbox" | "scheduler" | "deploy", options: unknown): Promise<void> {
  const pkg = await readPluginPackage(LOCAL_DIR);
  const provide = pkg.manifest.provides.find((entry) => entry.slot === slot)!;
  await checkAdapterOptions(pkg, provide, options);
}

describe("the local sandbox, scheduler and deploy slots' config schemas", () => {
  it("refuse a misspelt localSandbox() option, naming it", async () => {
    const descriptor = localSandbox({ defaultTimeout: 5_000, maxOutput: 1_024 } as never);
    await expect(check("sandbox", descriptor.options)).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_OPTIONS",
      message: expect.stringMatching(/sandbox-options\.json: options must NOT have additional properties \(defaultTimeout\); options must NOT have additional properties \(maxOutput\)/),
    });
  });

  it("refuse a misspelt localScheduler() option, naming it", async () => {
    await expect(check("scheduler", localScheduler({ pollInterval: 50 } as never).options)).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_OPTIONS",
      message: expect.stringContaining("options must NOT have additional properties (pollInterval)"),
    });
  });

  it("refuse an unknown localDeploy() option, naming it", async () => {
    await expect(check("deploy", localDeploy({ dir: "/srv/deployments" } as never).options)).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_OPTIONS",
      message: expect.stringContaining("options must NOT have additional properties (dir)"),
    });
  });

  it("refuse values the adapters would refuse later", async () => {
    await expect(check("sandbox", { defaultTimeoutMs: 0 })).rejects.toThrow(/options\/defaultTimeoutMs must be > 0/);
    await expect(check("sandbox", { env: { TOKEN: 1 } })).rejects.toThrow(/options\/env\/TOKEN must be string/);
    await expect(check("scheduler", { batchSize: 2.5 })).rejects.toThrow(/options\/batchSize must be integer/);
  });

  it("accept every documented option, and none", async () => {
    await check("sandbox", localSandbox({ root: "/tmp/sandboxes", agentDir: "/tmp/agent", defaultTimeoutMs: 5_000, maxOutputBytes: 0, env: { LANG: "C.UTF-8" } }).options);
    await check("scheduler", localScheduler({ pollIntervalMs: 50, leaseMs: 30_000, batchSize: 5, owner: "scheduler-a" }).options);
    await check("deploy", localDeploy({ directory: "/srv/deployments" }).options);
    for (const slot of ["sandbox", "scheduler", "deploy"] as const) await check(slot, {});
  });
});
