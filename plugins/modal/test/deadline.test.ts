import { describe, expect, it } from "vitest";
import { withinDeadline } from "../src/deadline.js";

describe("withinDeadline", () => {
  it("fails a Modal call that gets no answer in time, naming the option to raise", async () => {
    const never = () => new Promise<never>(() => undefined);
    await expect(withinDeadline("creating a sandbox", 20, "requestTimeoutMs", never)).rejects.toMatchObject({
      code: "AL_ERR_SANDBOX_ENGINE",
      message: expect.stringContaining("Modal: creating a sandbox got no answer within 20 ms (requestTimeoutMs)"),
      fix: expect.stringContaining("raise the sandbox's requestTimeoutMs when"),
    });
    await expect(withinDeadline("running a command", 20, "the command's timeout", never)).rejects.toMatchObject({ fix: expect.stringContaining("raise the command's timeout when") });
  });

  it("passes an answer that comes in time through", async () => {
    expect(await withinDeadline("listing", 1000, "requestTimeoutMs", async () => "ok")).toBe("ok");
  });
});
