import { describe, expect, it } from "vitest";
import { isAssemblyLineError, withinTimeout } from "../src/index.js";

describe("withinTimeout", () => {
  it("gives work that settles in time its value or its own error", async () => {
    await expect(withinTimeout(Promise.resolve(7), 1_000, "the adapter")).resolves.toBe(7);
    await expect(withinTimeout(Promise.reject(new Error("refused")), 1_000, "the adapter")).rejects.toThrow("refused");
  });

  it("fails work that never settles with AL_ERR_PLUGIN_TIMEOUT naming what it waited for", async () => {
    const error = await withinTimeout(new Promise(() => undefined), 20, "the adapter's close").catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_PLUGIN_TIMEOUT")).toBe(true);
    expect(String(error)).toContain("the adapter's close did not settle within 20 ms");
  });

  it("fails with the caller's own error when it names the wait otherwise, and only then", async () => {
    const own = new Error("the handler did not finish in time");
    await expect(withinTimeout(new Promise(() => undefined), 20, "a hook handler", () => own)).rejects.toBe(own);
    let made = 0;
    await expect(withinTimeout(Promise.resolve("done"), 1_000, "a hook handler", () => new Error(`made ${++made}`))).resolves.toBe("done");
    expect(made).toBe(0);
  });
});
