import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const instrumentation = (options: string) => `import { defineInstrumentation } from "@assemblyline-agents/core";
export default defineInstrumentation({ ${options}, setup: () => ({ export() {} }) });
`;

describe("instrumentation.ts keys", () => {
  // A misspelt captureContent would build at the default ("usage") and export spans its author turned off.
  it.each([
    ["capturecontent", `capturecontent: "off"`],
    ["captureContents", `captureContents: "off"`],
    ["servicename", `servicename: "billing-agent"`],
  ])("refuse the misspelt key %s, naming it and the keys there are", async (key, options) => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": instrumentation(options) });
    const error = await buildAgent(dir).then(() => undefined, (thrown: Error & { code?: string; fix?: string }) => thrown);
    expect(error).toMatchObject({ code: "AL_ERR_INSTRUMENTATION_DEFINITION", message: expect.stringContaining(`unknown key "${key}"`) });
    expect(error?.fix).toContain("serviceName, captureContent, setup");
  });

  it("build with the keys defineInstrumentation takes", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "instrumentation.ts": instrumentation(`serviceName: "billing-agent", captureContent: "off"`) });
    const built = await buildAgent(dir);
    expect(built.manifest.instrumentation).toMatchObject({ captureContent: "off", serviceName: "billing-agent" });
  });
});
