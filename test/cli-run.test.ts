import { execFile } from "node:child_process";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const example = join(root, "examples/notes-agent");
const script = join(example, "conversations/remember-milk.json");

async function cli(args: string[]) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error" } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

describe("assembly-line CLI", () => {
  it("builds the example and prints its revision", async () => {
    const { code, stdout } = await cli(["build", example]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/agentRevision rev_[0-9a-f]{32}/);
  });

  it("runs the example on a scripted conversation, pausing for approval then completing with --approve all", async () => {
    const paused = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`]);
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(/approval\.requested\s+record_note/);
    expect(paused.stdout).toMatch(/waiting for approval: record_note/);

    const done = await cli(["run", example, "--message", "Remember to buy milk", "--model", `scripted:${script}`, "--approve", "all"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/note\.recorded/);
    expect(done.stdout).toMatch(/tool\.completed\s+lookup_notes -> \{"query":"milk","matches":\["Buy milk on the way home"\]\}/);
    expect(done.stdout.trim().split("\n").at(-1)).toBe('Noted: "Buy milk on the way home". It\'s the only note about milk.');
  });

  it("prints one JSON event per line with --json", async () => {
    const { code, stdout } = await cli(["run", example, "--message", "Remember", "--model", `scripted:${script}`, "--approve", "none", "--json"]);
    expect(code).toBe(0);
    const lines = stdout.trim().split("\n").map((line) => JSON.parse(line));
    const events = lines.filter((line) => "seq" in line);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.map((event) => event.type)).toContain("approval.denied");
    expect(lines.at(-1).result.status).toBe("completed");
  });

  it("explains a malformed model script and a bad option", async () => {
    const dir = mkdtempSync(join(tmpdir(), "al-script-"));
    writeFileSync(join(dir, "bad.json"), JSON.stringify({ turns: [{ toolCalls: [] }] }));
    const bad = await cli(["run", example, "--message", "x", "--model", `scripted:${join(dir, "bad.json")}`]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/AL_ERR_SCRIPTED_MODEL[\s\S]*turns\[0\]\.toolCalls must be a non-empty array/);
    const usage = await cli(["run", example, "--approve", "maybe", "--message", "x"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--approve maybe is not all or none/);
  });
});
