import { beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { listenNodeRuntime, noopLogger, type NodeRuntimeOptions } from "../src/index.js";
import { fixtureBundle } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("listenNodeRuntime's options", () => {
  it("refuses owesDelivery, which the host decides from its channel modules, before it listens", async () => {
    const options = { ...bundle, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {}, owesDelivery: () => true } as NodeRuntimeOptions;
    await expect(listenNodeRuntime(options)).rejects.toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("owesDelivery") });
  });

  it.each([
    [{ attachments: { maxBytes: "10MB" } }, 'attachments.maxBytes="10MB"'],
    [{ attachments: { maxBytes: 0 } }, "attachments.maxBytes=0"],
    [{ attachments: { timeoutMs: 1.5 } }, "attachments.timeoutMs=1.5"],
    [{ attachments: { allowedHosts: "files.example.com" } }, "attachments.allowedHosts"],
    [{ attachments: { maxByte: 1000 } }, "attachments.maxByte is not an option"],
    [{ outbox: { maxAttempts: "8" } }, 'outbox.maxAttempts="8"'],
    [{ outbox: { pollIntervalMs: -1 } }, "outbox.pollIntervalMs=-1"],
    [{ outbox: { deliverTimeoutMs: 3_000_000_000 } }, "outbox.deliverTimeoutMs=3000000000"],
    [{ outbox: { batchSize: 0 } }, "outbox.batchSize=0"],
    [{ outbox: { retries: 3 } }, "outbox.retries is not an option"],
    [{ outbox: 500 }, "outbox is number"],
  ])("refuses %j before it listens, naming the option", async (given, named) => {
    const options = { ...bundle, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {}, ...given } as unknown as NodeRuntimeOptions;
    // A host that starts anyway is stopped, so the failure is this test's alone.
    const refused = await listenNodeRuntime(options).then(async (handle) => void (await handle.shutdown({ timeoutMs: 1_000 })), (error: unknown) => error);
    expect(refused).toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining(named) });
  });
});
