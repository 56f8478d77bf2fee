import { buildAgent } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const sandboxFile = (options: string) => `import { defineSandbox } from "@assemblyline-agents/core";
export default defineSandbox(${options} as never);
`;

const buildSandbox = (options: string) => buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "sandbox.ts": sandboxFile(options) }));

describe("sandbox.ts options", () => {
  it("refuses an option JSON cannot hold, naming it, instead of building the adapter's default in its place", async () => {
    const cases = [
      { options: `{ adapter: "local", defaultTimeoutMs: Infinity }`, problem: "options.defaultTimeoutMs is Infinity, which JSON cannot represent" },
      { options: `{ adapter: "local", maxOutputBytes: NaN }`, problem: "options.maxOutputBytes is NaN, which JSON cannot represent" },
      { options: `{ adapter: "local", env: { TOKEN: () => "x" } }`, problem: "options.env.TOKEN is a function" },
      { options: `{ adapter: "docker", image: "node:22", mounts: [undefined] }`, problem: "options.mounts[0] is undefined" },
      { options: `{ adapter: "docker", image: "node:22", memory: 512n }`, problem: "options.memory is a bigint" },
    ];
    for (const { options, problem } of cases) {
      await expect(buildSandbox(options), options).rejects.toMatchObject({
        code: "AL_ERR_SANDBOX_DEFINITION",
        message: expect.stringContaining(`sandbox.ts: sandbox ${problem}`),
        fix: expect.stringContaining("plain JSON data"),
      });
    }
  });

  it("records plain options as written, leaving out a key set to undefined as an option not given", async () => {
    const { manifest } = await buildSandbox(`{ adapter: "local", image: undefined, defaultTimeoutMs: 5000, env: { TOKEN: "x", UNSET: undefined }, sessions: null }`);
    expect(manifest.sandbox).toMatchObject({ adapter: "local", image: null, options: { defaultTimeoutMs: 5000, env: { TOKEN: "x" }, sessions: null } });
    expect(Object.keys(manifest.sandbox?.options ?? {})).toEqual(["defaultTimeoutMs", "env", "sessions"]);
  });
});
