import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const workDir = mkdtempSync(join(tmpdir(), "al-cli-rev-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

async function cli(args: string[]) {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error" } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

/** A private copy of the notes example whose record_note says which build ran it. */
function notesAgent(name: string): string {
  const dir = join(workDir, name);
  cpSync(join(root, "examples/notes-agent"), dir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  return dir;
}

function changeRecordNote(dir: string, build: string): void {
  const file = join(dir, "tools/record_note.ts");
  writeFileSync(file, readFileSync(file, "utf8").replace("return { recorded: true, key };", `return { recorded: true, key, build: "${build}" };`));
}

async function pause(dir: string): Promise<string> {
  const paused = await cli(["run", dir, "--message", "Remember to buy milk", "--model", `scripted:${join(dir, "conversations/remember-milk.json")}`, "--json"]);
  expect(paused.code).toBe(3);
  const result = JSON.parse(paused.stdout).data.result;
  expect(result.status).toBe("waiting_approval");
  return result.runId;
}

const recordOutput = async (dir: string, runId: string) => {
  const shown = JSON.parse((await cli(["runs", "show", runId, "--agent", dir, "--json"])).stdout).data;
  return shown.toolCalls.find((call: { toolName: string }) => call.toolName === "record_note").output;
};

describe("assembly-line and runs paused across a rebuild", () => {
  it("approves a run on the build that paused it after the tool changed and the folder was rebuilt", async () => {
    const dir = notesAgent("pinned");
    const runId = await pause(dir);
    changeRecordNote(dir, "second");
    expect((await cli(["build", dir])).code).toBe(0);

    const listed = await cli(["runs", "list", "--agent", dir]);
    expect(listed.stdout).toMatch(new RegExp(`${runId}\\s+waiting_approval\\s+rev_\\w+ \\(earlier build\\)`));

    const approved = await cli(["approve", runId, "--agent", dir]);
    expect(approved.code).toBe(0);
    expect(approved.stdout.trim().split("\n").at(-1)).toBe('Noted: "Buy milk on the way home". It\'s the only note about milk.');
    expect(await recordOutput(dir, runId)).not.toHaveProperty("build");
  });

  it("moves a paused run to the current build with runs migrate --to current", async () => {
    const dir = notesAgent("migrated");
    const runId = await pause(dir);
    changeRecordNote(dir, "second");
    expect((await cli(["build", dir])).code).toBe(0);

    const refused = await cli(["runs", "migrate", runId, "--agent", dir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--to current/);

    const moved = await cli(["runs", "migrate", runId, "--to", "current", "--agent", dir]);
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/moved from rev_\w+ to rev_\w+/);
    expect((await cli(["approve", runId, "--agent", dir])).code).toBe(0);
    expect(await recordOutput(dir, runId)).toMatchObject({ build: "second" });
  });
});
