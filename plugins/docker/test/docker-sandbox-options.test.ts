import { describe, expect, it } from "vitest";
import { DockerSandboxAdapter } from "../src/index.js";

/** Checked at construction, with no engine: a value of the wrong kind is refused by name, not met later as a bare TypeError or sent to the engine. */
describe("dockerSandbox options of the wrong kind", () => {
  it("refuses a scope, user or socketPath that is not a non-empty string, naming it", () => {
    for (const [name, value] of [["scope", 5], ["user", 1000], ["socketPath", 5], ["user", ""]] as const) {
      expect(() => new DockerSandboxAdapter({ image: "busybox", [name]: value } as never), name).toThrow(new RegExp(`AL_ERR_SANDBOX_DEFINITION: dockerSandbox option ${name} is ${JSON.stringify(value)}, not a non-empty string`));
    }
    expect(() => new DockerSandboxAdapter({ image: "busybox", user: "1000:1000", scope: "tenant-a" })).not.toThrow();
  });

  it("refuses an env value holding a NUL byte, naming the variable, instead of failing the first run's container", () => {
    expect(() => new DockerSandboxAdapter({ image: "busybox", env: { TOKEN: "abc\0def" } })).toThrow(/AL_ERR_SANDBOX_DEFINITION: dockerSandbox option env\.TOKEN is "abc\\u0000def", not a string without a NUL byte/);
    expect(() => new DockerSandboxAdapter({ image: "busybox", env: { TOKEN: "abc" } })).not.toThrow();
  });
});
