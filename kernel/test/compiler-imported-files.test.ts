import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

/** A tool that reads data four ways: a static JSON import, one through a helper module, one inside execute, and a file next to it by URL. */
const lookupTool = toolSource({
  imports: `import table from "../data/table.json";\nimport { units } from "../lib/units";`,
  execute: `const lazy = (await import("../data/lazy.json")).default;
    const prompt = new URL("../prompts/lookup.md", import.meta.url);
    return { table, units, lazy, prompt: prompt.href };`,
});

const folder = () =>
  agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/lookup.ts": lookupTool,
    "lib/units.ts": `import units from "./units.json";\nexport { units };\n`,
    "lib/units.json": `{ "length": "m" }`,
    "data/table.json": `{ "milk": 1 }`,
    "data/lazy.json": `{ "eggs": 2 }`,
    "data/unused.json": `{ "bread": 3 }`,
    "prompts/lookup.md": "Look it up.\n",
    "notes.txt": "Ideas for later.\n",
  });

const revisionOf = async (dir: string) => (await buildAgent(dir)).manifest.agentRevision;

const buildError = async (dir: string) =>
  buildAgent(dir).then(
    () => {
      throw new Error("expected the build to fail");
    },
    (error: Error & { code?: string }) => error,
  );

describe("files an agent's modules import count toward its revision", () => {
  it("changes agentRevision when only a JSON file a tool imports changes", async () => {
    const dir = folder();
    const before = await revisionOf(dir);
    writeFileSync(join(dir, "data/table.json"), `{ "milk": 9 }`);
    expect(await revisionOf(dir)).not.toBe(before);
  });

  it("follows imports made inside execute, through a helper module, and files named by new URL(..., import.meta.url)", async () => {
    const dir = folder();
    for (const [file, text] of [["data/lazy.json", `{ "eggs": 3 }`], ["lib/units.json", `{ "length": "ft" }`], ["prompts/lookup.md", "Look harder.\n"]] as const) {
      const before = await revisionOf(dir);
      writeFileSync(join(dir, file), text);
      expect(await revisionOf(dir), file).not.toBe(before);
    }
  });

  it("keeps a file nothing imports out of the revision", async () => {
    const dir = folder();
    const before = await revisionOf(dir);
    writeFileSync(join(dir, "notes.txt"), "Other ideas.\n");
    writeFileSync(join(dir, "data/unused.json"), `{ "bread": 4 }`);
    expect(await revisionOf(dir)).toBe(before);
  });

  it("lists the imported files among the sources and copies them into the revision", async () => {
    const dir = folder();
    const { manifest } = await buildAgent(dir);
    expect(manifest.sources.map((source) => source.file)).toEqual([
      "agent.ts",
      "data/lazy.json",
      "data/table.json",
      "lib/units.json",
      "lib/units.ts",
      "prompts/lookup.md",
      "tools/lookup.ts",
    ]);
    const copy = join(dir, ".assembly-line", "revisions", manifest.agentRevision, "src");
    expect(readFileSync(join(copy, "data/table.json"), "utf8")).toBe(`{ "milk": 1 }`);
    expect(existsSync(join(copy, "prompts/lookup.md"))).toBe(true);
    expect(existsSync(join(copy, "notes.txt"))).toBe(false);
  });

  it("refuses an import that leads outside the agent folder, naming the importer, the import and the way out", async () => {
    const repo = agentFolder({
      "shared/table.json": `{ "milk": 1 }`,
      "agent/agent.ts": MINIMAL_AGENT,
      "agent/tools/lookup.ts": toolSource({ imports: `import table from "../../shared/table.json";`, execute: "return { table };" }),
    });
    const error = await buildError(join(repo, "agent"));
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/tools\/lookup\.ts imports "\.\.\/\.\.\/shared\/table\.json", which is outside the agent folder/);
    expect(error.message).toMatch(/fix: Move the file into the agent folder, or put shared code in a package/);
  });

  it("refuses an imported data file that is a symbolic link", async () => {
    const repo = agentFolder({
      "shared/table.json": `{ "milk": 1 }`,
      "agent/agent.ts": MINIMAL_AGENT,
      "agent/tools/lookup.ts": toolSource({ imports: `import table from "../data/table.json";`, execute: "return { table };" }),
      "agent/data/.keep": "",
    });
    symlinkSync(join(repo, "shared/table.json"), join(repo, "agent/data/table.json"));
    const error = await buildError(join(repo, "agent"));
    expect(error.code).toBe("AL_ERR_AGENT_FOLDER");
    expect(error.message).toMatch(/tools\/lookup\.ts imports "\.\.\/data\/table\.json", a symbolic link to /);
  });

  it("leaves packages out of the revision: they resolve from node_modules in every build", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/lookup.ts": toolSource({ imports: `import { units } from "units-pkg";`, execute: "return { units };" }),
      "node_modules/units-pkg/package.json": `{ "name": "units-pkg", "type": "module", "main": "index.js" }`,
      "node_modules/units-pkg/index.js": `export const units = "m";\n`,
    });
    const before = await buildAgent(dir);
    expect(before.manifest.sources.map((source) => source.file)).toEqual(["agent.ts", "tools/lookup.ts"]);
    writeFileSync(join(dir, "node_modules/units-pkg/index.js"), `export const units = "ft";\n`);
    expect(await revisionOf(dir)).toBe(before.manifest.agentRevision);
  });
});
