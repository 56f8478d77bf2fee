// The one workload every system runs: a scripted model of 3 turns (tool call,
// tool call, final text) and 2 tools, each returning a small JSON object.
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadRuntimeBundle, scriptedHarness } from "@assemblyline-agents/runtime";

import { TURNS } from "./script.js";

// defaultEnabled: the scripted model calls both tools by name, and an authored tool is otherwise deferred.
const TOOL = (name, extra = "") => `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({
  description: "${name}",
  inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
  defaultEnabled: true,
  ${extra}
  async execute(input) { return { ${name}: input.value.length }; },
});
`;

const BUILD = fileURLToPath(new URL("./build-agent.js", import.meta.url));

/**
 * Compile the bench agent into a temp folder (in a process of its own, as
 * `assembly-line build` runs before a deploy: the runtime's process loads the
 * built artifact and never holds the compiler); `approval: true` makes the first
 * tool ask for approval, so every run pauses there (the paused-runs bench).
 */
export async function benchAgent({ approval = false, channel = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "al-bench-agent-"));
  mkdirSync(join(dir, "tools"));
  writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "bench/model" });\n`);
  writeFileSync(join(dir, "tools/first.ts"), TOOL("first", approval ? `needsApproval: approvalRequired("Reviewed."),` : ""));
  writeFileSync(join(dir, "tools/second.ts"), TOOL("second"));
  if (channel) {
    mkdirSync(join(dir, "channels"));
    writeFileSync(join(dir, "channels/message.ts"), `import { defineChannel } from "@assemblyline-agents/core";\nexport default defineChannel({ transport: "http", route: "/message" });\n`);
  }
  const artifactRoot = execFileSync(process.execPath, [BUILD, dir], { encoding: "utf8" }).trim();
  const bundle = await loadRuntimeBundle(artifactRoot);
  return { dir, bundle, harness: scriptedHarness({ turns: TURNS }), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
