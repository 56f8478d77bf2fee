import { describe, expect, it, vi } from "vitest";

describe("the lazy Pi engine after a failed first load", () => {
  it("loads the engine again on the next run once the package is installed", async () => {
    let installed = false;
    vi.doMock("@assemblyline-agents/pi", async () => {
      if (!installed) {
        throw Object.assign(new Error("Cannot find package '@assemblyline-agents/pi' imported from /app/x.js"), { code: "ERR_MODULE_NOT_FOUND" });
      }
      return {
        piAgentHarness: () => ({ name: "pi", runTurn: async () => ({ status: "completed", response: { text: "engine loaded" } }) }),
      };
    });
    const { defaultPiHarness } = await import("../src/pi-engine.js");
    const harness = await defaultPiHarness();

    expect(await harness.runTurn({} as never, {} as never).catch((error: unknown) => error)).toBeInstanceOf(Error);

    installed = true; // `npm install @assemblyline-agents/pi` in another terminal
    vi.resetModules();
    expect(await harness.runTurn({} as never, {} as never)).toEqual({ status: "completed", response: { text: "engine loaded" } });
  });
});
