import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll } from "vitest";

const created: string[] = [];
afterAll(() => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Write an agent folder from a map of relative path -> source text. */
export function agentFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "al-agent-"));
  created.push(dir);
  writeFiles(dir, files);
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
}

export const MINIMAL_AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "You are a test agent." });
`;

/**
 * A tool source with the given body for execute and extra definition fields.
 * `upFront` sets `defaultEnabled: true`: an authored tool on `auto` is deferred,
 * and a scripted model that calls the tool by name needs it offered.
 */
export function toolSource(options: { execute?: string; extra?: string; schema?: string; imports?: string; upFront?: boolean } = {}): string {
  return `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
${options.imports ?? ""}
export default defineTool({
  description: "A test tool.",
  inputSchema: ${options.schema ?? `{ type: "object", properties: { value: { type: "string" } }, required: ["value"], additionalProperties: false }`},
  ${options.upFront ? "defaultEnabled: true," : ""}
  ${options.extra ?? ""}
  async execute(input, ctx) {
    ${options.execute ?? "return { echoed: input.value };"}
  },
});
`;
}
