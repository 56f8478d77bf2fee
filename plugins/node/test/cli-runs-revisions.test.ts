import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./support/host.js";
import { cli } from "./support/cli.js";

/** A tool that needs approval; `by` shows which build executed it. */
const gatedTool = (description: string, by: string) => `import { defineTool, approvalRequired } from "@assemblyline-agents/core";
export default defineTool({
  description: ${JSON.stringify(description)},
  inputSchema: { type: "object", properties: { note: { type: "string" } }, required: ["note"], additionalProperties: false },
  defaultEnabled: true,
  needsApproval: approvalRequired("It is visible."),
  async execute(input) { return { done: input.note, by: ${JSON.stringify(by)} }; },
});
`;

let agentDir: string;
let stateDir: string;
let runId: string;
let started: string;
let moved: string;

const revisionOf = async (): Promise<string> => {
  const built = await cli(["build", agentDir, "--json"]);
  expect(built.code, built.err).toBe(0);
  return JSON.parse(built.out).data.agentRevision as string;
};

/**
 * A run paused on publish under build A, moved to build B (which adds archive), approved there and
 * paused again on archive; then the folder is reverted to A and rebuilt.
 */
beforeAll(async () => {
  const root = tempDir("al-cli-runs-revisions-");
  agentDir = join(root, "agent");
  stateDir = join(root, "state");
  mkdirSync(join(agentDir, "tools"), { recursive: true });
  writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "notes", model: "scripted:unused" });\n`);
  writeFileSync(join(agentDir, "tools/publish.ts"), gatedTool("Publish a note.", "A"));
  writeFileSync(join(agentDir, "script.json"), JSON.stringify({ turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { toolCalls: [{ name: "archive", input: { note: "milk" } }] }, { text: "done" }] }));
  const at = ["--agent", agentDir, "--state-dir", stateDir];

  const ran = await cli(["run", agentDir, "-m", "publish milk", "--model", `scripted:${join(agentDir, "script.json")}`, "--state-dir", stateDir, "--json"]);
  expect(ran.code, ran.err).toBe(3);
  runId = JSON.parse(ran.out).data.result.runId;
  started = await revisionOf();

  writeFileSync(join(agentDir, "tools/archive.ts"), gatedTool("Archive a note.", "B"));
  moved = await revisionOf();
  const migrated = await cli(["runs", "migrate", runId, "--to", "current", ...at]);
  expect(migrated.code, migrated.err).toBe(0);
  const approved = await cli(["approve", runId, ...at, "--json"]);
  expect(approved.code, approved.err).toBe(3);
  expect(JSON.parse(approved.out).data.result.pendingApprovals.map((call: { toolName: string }) => call.toolName)).toEqual(["archive"]);

  rmSync(join(agentDir, "tools/archive.ts"));
  expect(await revisionOf()).toBe(started);
});

describe("a migrated run after its folder was reverted to the build it started under", () => {
  it("is listed by runs list on the build it moved to, as an earlier build", async () => {
    const listed = await cli(["runs", "list", "--agent", agentDir, "--state-dir", stateDir]);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toContain(`${runId}  waiting_approval ${moved} (earlier build)`);
  });

  it("is shown by runs show on the build it continues on, with the one it started under", async () => {
    const shown = await cli(["runs", "show", runId, "--agent", agentDir, "--state-dir", stateDir]);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out.split("\n")[0]).toContain(`waiting_approval  revision ${moved} (started under ${started})  model`);
  });
});

describe("runs migrate of a run id the store does not hold", () => {
  it("names the --agent and --state-dir given in the command its fix prints", async () => {
    const refused = await cli(["runs", "migrate", "run_typo", "--to", "current", "--agent", agentDir, "--state-dir", stateDir, "--json"]);
    const { error } = JSON.parse(refused.out);
    expect(error.code).toBe("AL_ERR_RUN_NOT_FOUND");
    expect(error.fix).toContain(`\`assembly-line runs list --agent ${JSON.stringify(agentDir)} --state-dir ${JSON.stringify(stateDir)}\``);
  });
});

describe("kept builds shared by the state stores of one agent folder", () => {
  it("keeps the build a run paused in another --state-dir needs when a run against the default state prunes", async () => {
    const root = tempDir("al-cli-runs-stores-");
    const dir = join(root, "agent");
    const otherState = join(root, "s1");
    mkdirSync(join(dir, "tools"), { recursive: true });
    writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "notes", model: "scripted:unused" });\n`);
    writeFileSync(join(dir, "tools/publish.ts"), gatedTool("Publish a note.", "A"));
    writeFileSync(join(dir, "script.json"), JSON.stringify({ turns: [{ toolCalls: [{ name: "publish", input: { note: "milk" } }] }, { text: "done" }] }));
    const model = `scripted:${join(dir, "script.json")}`;

    const paused = await cli(["run", dir, "-m", "publish milk", "--model", model, "--state-dir", otherState, "--json"]);
    expect(paused.code, paused.err).toBe(3);
    const pausedId = JSON.parse(paused.out).data.result.runId as string;
    const first = JSON.parse(readFileSync(join(dir, ".assembly-line", "manifest.json"), "utf8")).agentRevision as string;

    writeFileSync(join(dir, "tools/publish.ts"), gatedTool("Publish a note.", "B"));
    const then = new Date(Date.now() - 2 * 60 * 60_000);
    utimesSync(join(dir, ".assembly-line", "revisions", first), then, then);
    const other = await cli(["run", dir, "-m", "publish milk", "--model", model, "--json"]);
    expect(other.code, other.err).toBe(3);

    const approved = await cli(["approve", pausedId, "--agent", dir, "--state-dir", otherState, "--json"]);
    expect(approved.code, approved.out).toBe(0);
    const published = JSON.parse(approved.out).data.events.find((event: { type: string }) => event.type === "tool.completed");
    expect(published.data.output).toEqual({ done: "milk", by: "A" });
  });
});
