import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./support/host.js";
import { cli } from "./support/cli.js";

/** Every file under `dir` by its path, as a hash of its bytes. */
function contentsOf(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files[relative(dir, path)] = createHash("sha256").update(readFileSync(path)).digest("hex");
    }
  };
  walk(dir);
  return files;
}

let agentDir: string;
let stateDir: string;
let runId: string;
beforeAll(async () => {
  const root = tempDir("al-cli-read-only-");
  agentDir = join(root, "agent");
  stateDir = join(root, "state");
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "small", model: "scripted:unused", selfImprovement: { writable: true } });\n`,
    "automations/tick.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 60000 }, message: "tick" });\n`,
    "skills/audit/SKILL.md": "---\ndescription: Audit entries.\n---\nCheck receipts.\n",
    "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  const ran = await cli(["run", agentDir, "-m", "hi", "--model", `scripted:${join(agentDir, "hello.json")}`, "--state-dir", stateDir, "--json"]);
  expect(ran.code, ran.err).toBe(0);
  runId = JSON.parse(ran.out).data.result.runId;
});

describe("commands that only read leave the state store byte for byte as it was", () => {
  it.each([
    ["runs list", () => ["runs", "list"]],
    ["runs show", () => ["runs", "show", runId]],
    ["skills list", () => ["skills", "list"]],
    ["skills show", () => ["skills", "show", "audit"]],
    ["skills diff", () => ["skills", "diff", "audit"]],
    ["automations list", () => ["automations", "list"]],
  ])("%s", async (_name, command) => {
    const before = contentsOf(stateDir);
    const result = await cli([...command(), "--agent", agentDir, "--state-dir", stateDir]);
    expect(result.code, result.err).toBe(0);
    expect(contentsOf(stateDir)).toEqual(before);
  });
});
