import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

const agentWith = (fields: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ ${fields} } as never);\n`;

const buildError = async (files: Record<string, string>) =>
  buildAgent(agentFolder(files)).then(
    () => {
      throw new Error("expected the build to fail");
    },
    (error: Error & { code?: string }) => error,
  );

describe("agent.ts fields of the wrong type", () => {
  it.each([
    ["model", `model: 5`, /agent\.ts: model must be a "provider\/model" string, not 5/],
    ["instructions", `model: "m/x", instructions: 5`, /agent\.ts: instructions must be a string, not 5/],
    ["instructions as a list", `model: "m/x", instructions: ["Be brief."]`, /agent\.ts: instructions must be a string, not \["Be brief\."\]/],
    ["id", `model: "m/x", id: 5`, /agent\.ts: id must be a non-empty string without "\/", not 5/],
    ["an empty id", `model: "m/x", id: ""`, /agent\.ts: id must be a non-empty string without "\/", not ""/],
    ["an id with a slash", `model: "m/x", id: "team/agent"`, /agent\.ts: id must be a non-empty string without "\/", not "team\/agent"/],
    ["name", `model: "m/x", name: 5`, /agent\.ts: name must be a non-empty string, not 5/],
    ["description", `model: "m/x", description: 5`, /agent\.ts: description must be a string, not 5/],
    ["defaultTools as one name", `model: "m/x", defaultTools: "read"`, /agent\.ts: defaultTools must be a list of tool names, not "read"/],
    ["defaultTools with a number", `model: "m/x", defaultTools: ["read", 1]`, /agent\.ts: defaultTools must be a list of tool names, not \["read",1\]/],
    ["dynamicAutomations as true", `model: "m/x", dynamicAutomations: true`, /agent\.ts: dynamicAutomations must be an object, not true/],
    ["dynamicConnections as a string", `model: "m/x", dynamicConnections: "yes"`, /agent\.ts: dynamicConnections must be an object, not "yes"/],
  ])("refuses %s of the wrong type, which would have built with another meaning", async (_what, fields, message) => {
    const error = await buildError({ "agent.ts": agentWith(fields) });
    expect(error.code).toBe("AL_ERR_AGENT_DEFINITION");
    expect(error.message).toMatch(message);
    expect(error.message).toContain("fix:");
  });

  it("refuses a subagent's instructions of the wrong type, naming its agent.ts", async () => {
    const error = await buildError({ "agent.ts": MINIMAL_AGENT, "subagents/res/agent.ts": agentWith(`description: "Researches.", instructions: 5`) });
    expect(error.code).toBe("AL_ERR_SUBAGENT_DEFINITION");
    expect(error.message).toMatch(/subagents\/res\/agent\.ts: instructions must be a string, not 5/);
  });

  it("builds every field with its type, and an agent.ts that leaves them out", async () => {
    const full = agentFolder({ "agent.ts": agentWith(`model: "m/x", id: "support-bot", name: "Support", description: "Answers.", instructions: "Be brief.", defaultTools: ["read"], dynamicAutomations: { dynamic: true }, dynamicConnections: { dynamic: false }`) });
    expect((await buildAgent(full)).manifest.agent).toMatchObject({ id: "support-bot", name: "Support", description: "Answers.", instructions: "Be brief.", defaultTools: ["read"], dynamicAutomations: { dynamic: true } });
    const bare = agentFolder({ "agent.ts": agentWith(`model: "m/x"`) });
    expect((await buildAgent(bare)).manifest.agent).toMatchObject({ instructions: "", defaultTools: null, description: null });
  });
});
