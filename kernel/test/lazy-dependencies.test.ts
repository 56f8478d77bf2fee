import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const RUNTIME = new URL("../dist/index.js", import.meta.url).href;

/** In a fresh process: which of `packages` are loaded after `steps` ran on the runtime's exports. */
function loadedAfter(steps: string): string[] {
  const script = `
    import { createRequire } from "node:module";
    const runtime = await import(${JSON.stringify(RUNTIME)});
    ${steps}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify(["jiti", "pino", "gray-matter", "ajv"].filter((name) => loaded.some((file) => file.includes("/node_modules/" + name + "/")))));
  `;
  const output = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" });
  return JSON.parse(output.trim().split("\n").at(-1)!) as string[];
}

// A runtime that loads a built agent, with its own logger and no skills, does not hold the
// TypeScript loader, the logging library or the YAML parser (jiti alone is 13 MB of RSS); nor
// the schema compiler before a schema is compiled (a build, a tool's first call).
describe("dependencies loaded on first use", () => {
  it("importing the runtime loads none of jiti, pino, gray-matter and ajv", () => {
    expect(loadedAfter("")).toEqual([]);
  });

  it("each loads when its feature is first used, and works", () => {
    const steps = `
      runtime.createRuntimeLogger({ level: "error" }).info({}, "not shown");
      const skill = runtime.parseSkillFile("---\\ndescription: Triage\\n---\\nSteps.", "triage", "skills/triage/SKILL.md");
      if (skill.description !== "Triage" || skill.body.trim() !== "Steps.") throw new Error("parsed " + JSON.stringify(skill));
    `;
    expect(loadedAfter(steps)).toEqual(["pino", "gray-matter"]);
  });
});
