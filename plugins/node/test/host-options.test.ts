import { describe, expect, it } from "vitest";
import { listenNodeRuntime, noopLogger, type NodeRuntimeOptions } from "../src/index.js";
import { fixtureBundle } from "./support/host.js";

describe("listenNodeRuntime's options", () => {
  it("refuses owesDelivery, which the host decides from its channel modules, before it listens", async () => {
    const bundle = await fixtureBundle();
    const options = { ...bundle, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: {}, owesDelivery: () => true } as NodeRuntimeOptions;
    await expect(listenNodeRuntime(options)).rejects.toMatchObject({ code: "AL_ERR_HOST_CONFIG", message: expect.stringContaining("owesDelivery") });
  });
});
