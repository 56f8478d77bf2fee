import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";

// Files the links point at live outside every agent folder.
const outside = mkdtempSync(join(tmpdir(), "al-outside-"));
afterAll(() => rmSync(outside, { recursive: true, force: true }));

const buildError = async (dir: string) =>
  buildAgent(dir).then(
    () => {
      throw new Error("expected the build to fail");
    },
    (error: Error & { code?: string }) => error,
  );

describe("symbolic links in an agent folder", () => {
  it("refuses a linked tool file, whose code the revision would neither cover nor keep", async () => {
    writeFileSync(join(outside, "shared-tool.ts"), toolSource());
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
    writeFiles(dir, { "tools/.keep": "" });
    symlinkSync(join(outside, "shared-tool.ts"), join(dir, "tools", "linked.ts"));
    const error = await buildError(dir);
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/tools\/linked\.ts is a symbolic link/);
    expect(error.message).toMatch(/fix: Put the file itself in the agent folder/);
  });

  it("refuses a linked agent.ts with the same error, not a failure to write the build", async () => {
    writeFileSync(join(outside, "agent.ts"), MINIMAL_AGENT);
    const dir = agentFolder({});
    symlinkSync(join(outside, "agent.ts"), join(dir, "agent.ts"));
    const error = await buildError(dir);
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/^AL_ERR_AGENT_FOLDER: agent\.ts is a symbolic link/);
  });

  it("refuses a linked folder that holds code", async () => {
    const shared = mkdtempSync(join(outside, "lib-"));
    writeFileSync(join(shared, "util.ts"), "export const x = 1;\n");
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
    symlinkSync(shared, join(dir, "lib"));
    const error = await buildError(dir);
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/lib is a symbolic link to a folder with code \(lib\/util\.ts\)/);
  });

  it("builds a folder with a linked folder of data only, and leaves it out of the revision", async () => {
    const data = mkdtempSync(join(outside, "data-"));
    writeFileSync(join(data, "big.csv"), "a,b\n");
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
    symlinkSync(data, join(dir, "data"));
    const { manifest } = await buildAgent(dir);
    expect(manifest.sources.map((source) => source.file)).toEqual(["agent.ts"]);
  });
});
