import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const agentWith = (options: string) => `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", ${options} });`;
const sandbox = (options: string) => `import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox(${options});`;

async function refusal(files: Record<string, string>): Promise<Error & { code: string; details?: { options: string[] } }> {
  const error = await buildAgent(agentFolder(files)).catch((caught: unknown) => caught);
  if (!isAssemblyLineError(error)) throw new Error(`expected an AssemblyLineError, got ${String(error)}`);
  return error as never;
}

describe("options declared by the SDK but not built are refused at build, by name", () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ["dynamicAutomations", { "agent.ts": agentWith("dynamicAutomations: { dynamic: true }") }, /dynamicAutomations \(agent\.ts dynamicAutomations:\)/],
    ["dynamicConnections", { "agent.ts": agentWith('dynamicConnections: { dynamic: true, allowedHosts: ["a.example.com"] }') }, /dynamicConnections \(agent\.ts dynamicConnections:\)/],
    ["automations", { "agent.ts": MINIMAL_AGENT, "automations/daily.ts": "export default {};" }, /automations \(automations\/\)/],
    ["connections", { "agent.ts": MINIMAL_AGENT, "connections/github.ts": "export default {};" }, /connections \(connections\/\)/],
    ["instrumentation.ts", { "agent.ts": MINIMAL_AGENT, "instrumentation.ts": "export default {};" }, /instrumentation\.ts \(instrumentation\.ts\)/],
    ["sandbox.ts adapter", { "agent.ts": MINIMAL_AGENT, "sandbox.ts": sandbox('{ adapter: "daytona", image: "node:22" }') }, /sandbox\.ts adapter \(sandbox\.ts adapter: "daytona"\)/],
    ["sandbox.ts snapshot", { "agent.ts": MINIMAL_AGENT, "sandbox.ts": sandbox('{ adapter: "local", snapshot: { mode: "manual" } }') }, /sandbox\.ts snapshot \(sandbox\.ts snapshot:\)/],
    ["sandbox.ts network", { "agent.ts": MINIMAL_AGENT, "sandbox.ts": sandbox('{ adapter: "local", network: "none" }') }, /sandbox\.ts network \(sandbox\.ts network:\)/],
  ];
  for (const [option, files, message] of cases) {
    it(`refuses ${option}`, async () => {
      const error = await refusal(files);
      expect(error.code).toBe("AL_ERR_NOT_SUPPORTED");
      expect(error.message).toMatch(message);
      expect(error.message).toMatch(/not supported by this runtime version[\s\S]*fix: /);
      expect(error.details?.options).toEqual([option]);
    });
  }

  it("names every unsupported option at once", async () => {
    const error = await refusal({ "agent.ts": agentWith("dynamicAutomations: {}, dynamicConnections: {}"), "instrumentation.ts": "export default {};" });
    expect(error.details?.options).toEqual(["dynamicAutomations", "dynamicConnections", "instrumentation.ts"]);
  });

  it("builds the spec's local sandbox example", async () => {
    const built = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "sandbox.ts": sandbox('{ adapter: "local", image: "node:22", workingDirectory: "/workspace" }') }));
    expect(built.manifest.sandbox).toMatchObject({ adapter: "local" });
  });
});
