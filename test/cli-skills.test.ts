import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const work = mkdtempSync(join(tmpdir(), "al-cli-skills-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function cli(args: string[]) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error" }, timeout: 180_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

function write(dir: string, files: Record<string, string>) {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
}

const skill = (body: string) => `---\ndescription: Close the month.\n---\n${body}\n`;

describe("assembly-line skills", () => {
  it("lists the store with what changed, diffs a skill against its seed, and resets it", async () => {
    const agent = join(work, "ledger");
    write(agent, {
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "openai/gpt-5.4-mini", selfImprovement: { writable: true } });\n`,
      "skills/close-month/SKILL.md": skill("Seed step."),
      "skills/audit/SKILL.md": "---\ndescription: Audit entries.\n---\nCheck receipts.\n",
      "script.json": JSON.stringify({
        turns: [{ toolCalls: [{ name: "write", input: { path: "/skills/close-month/SKILL.md", content: skill("Agent step.") } }] }, { text: "learned" }],
      }),
      "again.json": JSON.stringify({ turns: [{ text: "hello" }] }),
    });
    const learned = await cli(["run", agent, "--message", "learn", "--model", `scripted:${join(agent, "script.json")}`]);
    expect(learned.code, learned.stderr).toBe(0);
    expect(learned.stdout).toMatch(/skill\.changed/);

    // A new seed for the skill the agent changed: the redeploy keeps the agent's version.
    write(agent, { "skills/close-month/SKILL.md": skill("Seed step, revised.") });
    const redeployed = await cli(["run", agent, "--message", "hi", "--model", `scripted:${join(agent, "again.json")}`]);
    expect(redeployed.stdout).toMatch(/skill\.seed_conflict/);

    const listed = await cli(["skills", "list", "--agent", agent]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/audit\s+as seeded\s+Audit entries\./);
    expect(listed.stdout).toMatch(/close-month\s+changed by agent; the seed of rev_[0-9a-f]+ was not applied \(conflict\)/);

    const diff = await cli(["skills", "diff", "close-month", "--agent", agent]);
    expect(diff.stdout).toContain("--- seed/close-month/SKILL.md");
    expect(diff.stdout).toContain("-Seed step, revised.");
    expect(diff.stdout).toContain("+Agent step.");

    const shown = await cli(["skills", "show", "close-month", "--agent", agent]);
    expect(shown.stdout).toContain("Agent step.");

    const reset = await cli(["skills", "reset", "close-month", "--agent", agent]);
    expect(reset.code, reset.stderr).toBe(0);
    const after = await cli(["skills", "list", "--agent", agent]);
    expect(after.stdout).toMatch(/close-month\s+as seeded/);

    const missing = await cli(["skills", "show", "nope", "--agent", agent]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("AL_ERR_SKILL_NOT_FOUND");
  }, 600_000);

  it("refuses to change skills of an agent whose skills are manifest-only", async () => {
    const agent = join(work, "static");
    write(agent, {
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "openai/gpt-5.4-mini" });\n`,
      "skills/audit/SKILL.md": "---\ndescription: Audit entries.\n---\nCheck receipts.\n",
    });
    expect((await cli(["build", agent])).code).toBe(0);
    const listed = await cli(["skills", "list", "--agent", agent]);
    expect(listed.stdout).toMatch(/audit\s+as seeded/);
    const reset = await cli(["skills", "reset", "audit", "--agent", agent]);
    expect(reset.code).toBe(1);
    expect(reset.stderr).toContain("AL_ERR_SKILL_READ_ONLY");
  }, 300_000);
});
