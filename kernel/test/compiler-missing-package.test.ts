import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildAgent } from "@assemblyline-agents/runtime";
import { describe, expect, it, onTestFinished } from "vitest";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "a", model: "openai/gpt-5.4-mini", instructions: "x" });\n`;

/** The build error of an agent folder (outside any project, so no package resolves but the host's own) with `files`. */
async function buildError(files: Record<string, string>): Promise<{ code?: string; message: string; fix?: string }> {
  const agentDir = mkdtempSync(join(tmpdir(), "al-missing-package-"));
  onTestFinished(() => rmSync(agentDir, { recursive: true, force: true }));
  for (const [file, text] of Object.entries({ "agent.ts": AGENT, ...files })) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  return buildAgent(agentDir).then(
    () => {
      throw new Error("the build succeeded");
    },
    (caught: unknown) => caught as { code?: string; message: string; fix?: string },
  );
}

describe("an agent file importing a package that is not installed", () => {
  it("names the package to install, and where, when gateway.ts imports a plugin the agent's project lacks", async () => {
    const error = await buildError({
      "gateway.ts": `import { defineGateway } from "@assemblyline-agents/core";\nimport { localState } from "@assemblyline-agents/local/state";\nexport default defineGateway({ state: localState() });\n`,
    });
    expect(error.code).toBe("AL_ERR_SOURCE_LOAD");
    expect(error.message).toContain("gateway.ts threw while loading");
    expect(error.fix).toContain("`npm install @assemblyline-agents/local` in the agent folder");
  });

  it("names an unscoped package a tool imports", async () => {
    const error = await buildError({
      "tools/pad.ts": `import leftPad from "al-test-package-never-installed/sub.js";\nimport { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "Pads.", inputSchema: { type: "object" }, async execute() { return leftPad; } });\n`,
    });
    expect(error.fix).toContain("`npm install al-test-package-never-installed`");
  });

  it("keeps the general fix for a missing relative file, which no install brings", async () => {
    const error = await buildError({
      "tools/pad.ts": `import { pad } from "./helpers/missing.js";\nimport { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "Pads.", inputSchema: { type: "object" }, async execute() { return pad; } });\n`,
    });
    expect(error.code).toBe("AL_ERR_SOURCE_LOAD");
    expect(error.fix).not.toContain("npm install");
  });
});
