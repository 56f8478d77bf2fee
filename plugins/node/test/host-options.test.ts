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
    // Past the longest delay a timer takes, Node fires it every millisecond: the sweep would list every run ~2,400 times a second.
    [{ recoveryIntervalMs: 2_147_483_648 }, "recoveryIntervalMs=2147483648 is not an integer in 1..2147483647"],
    [{ recoveryIntervalMs: 0 }, "recoveryIntervalMs=0"],
  ])("refuses %j before it listens, naming the option", async (given, named) => {
    const options = { ...bundle, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {}, ...given } as unknown as NodeRuntimeOptions;
    // A host that starts anyway is stopped, so the failure is this test's alone.
    const refused = await listenNodeRuntime(options).then(async (handle) => void (await handle.shutdown({ timeoutMs: 1_000 })), (error: unknown) => error);
    expect(refused).toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining(named) });
  });

  it.each([
    [{ shutdownTimeoutMs: 3_000_000_000 }, "shutdownTimeoutMs"],
    [{ env: { ASSEMBLY_LINE_SHUTDOWN_TIMEOUT_MS: "3000000000" } }, "ASSEMBLY_LINE_SHUTDOWN_TIMEOUT_MS"],
  ])("refuses a shutdown timeout %j longer than a timer can wait, which would give up on the runs at once, naming it and the range", async (given, named) => {
    const options = { ...bundle, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {}, ...given } as unknown as NodeRuntimeOptions;
    const refused = await listenNodeRuntime(options).then(async (handle) => void (await handle.shutdown({ timeoutMs: 1_000 })), (error: unknown) => error);
    expect(refused).toMatchObject({
      code: "AL_ERR_HOST_CONFIG",
      message: expect.stringContaining(`${named}=3000000000 is not an integer in 0..2147483647`),
      fix: `Set ${named} to an integer from 0 to 2147483647.`,
    });
  });
});
