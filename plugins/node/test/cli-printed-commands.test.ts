import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startOpenAIChatServer, type ScriptedModelServer } from "@assemblyline-agents/pi/testkit";
import { tempDir } from "./support/host.js";
import { cli } from "./support/cli.js";

// What the command line prints for the reader to type next (a `more:` line, how to
// continue a paused run) works when followed as printed: it reaches the same runs.

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");

/** The printed line that starts with `label`, as the arguments a shell would pass: words, "quoted" ones unquoted. */
function printedCommand(output: string, label: string, command: string): string[] {
  const line = output.split("\n").find((text) => text.trim().startsWith(`${label} `));
  expect(line, `no "${label}" line in:\n${output}`).toBeDefined();
  const words = line!.trim().slice(label.length).trim().match(/"(?:[^"\\]|\\.)*"|\S+/g)!;
  expect(words.slice(0, command.split(" ").length).join(" ")).toBe(command);
  return words.slice(command.split(" ").length).map((word) => (word.startsWith('"') ? (JSON.parse(word) as string) : word));
}

/** Run `body` with `dir` as the working folder, where the CLI reads the project config. */
async function inFolder<T>(dir: string, body: () => Promise<T>): Promise<T> {
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    return await body();
  } finally {
    process.chdir(cwd);
  }
}

function notesAgent(): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-cli-printed-"), "notes-agent");
  cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
  return { agentDir, script: `scripted:${join(agentDir, "conversations/remember-milk.json")}` };
}

describe("runs list's `more:` line", () => {
  const AGENT = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "small", model: "scripted:unused" });\n`;
  const EXPLODE = `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "Always fails.", inputSchema: { type: "object", properties: {} }, defaultEnabled: true, async execute() { throw new Error("boom"); } });\n`;
  let agentDir: string;
  let stateDir: string;
  beforeAll(async () => {
    const root = tempDir("al-cli-more-");
    agentDir = join(root, "agent");
    stateDir = join(root, "state");
    const files = {
      "agent.ts": AGENT,
      "tools/explode.ts": EXPLODE,
      "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }),
      "explode.json": JSON.stringify({ turns: [{ toolCalls: [{ name: "explode", input: {} }] }, { text: "unreachable" }] }),
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(join(agentDir, file, ".."), { recursive: true });
      writeFileSync(join(agentDir, file), text);
    }
    // Oldest first: completed, failed, completed, failed, completed.
    for (const [message, script] of [["c1", "hello"], ["f1", "explode"], ["c2", "hello"], ["f2", "explode"], ["c3", "hello"]] as const) {
      await cli(["run", agentDir, "-m", message, "--model", `scripted:${join(agentDir, `${script}.json`)}`, "--state-dir", stateDir, "--json"]);
    }
  });

  it("repeats the --status, --agent and --state-dir the command line gave, so followed as printed it lists the next page of the same runs", async () => {
    const first = await cli(["runs", "list", "--agent", agentDir, "--state-dir", stateDir, "--status", "completed", "--limit", "1"]);
    expect(first.code, first.err).toBe(0);
    const more = first.out.split("\n").find((line) => line.startsWith("more:"));
    expect(more).toMatch(new RegExp(`^more: assembly-line runs list --cursor \\S+ --limit 1 --status completed --agent ${JSON.stringify(agentDir)} --state-dir ${JSON.stringify(stateDir)}$`));
    const messages = (output: string) => output.split("\n").filter((line) => line.startsWith("run_")).map((line) => line.split(/\s+/)[1] + " " + /"(\w+)"$/.exec(line)![1]);
    expect(messages(first.out)).toEqual(["completed c3"]);
    const second = await cli(printedCommand(first.out, "more:", "assembly-line"));
    expect(second.code, second.err).toBe(0);
    // Without --status it would be f2, without --state-dir (or --agent) no run at all.
    expect(messages(second.out)).toEqual(["completed c2"]);
    const third = await cli(printedCommand(second.out, "more:", "assembly-line"));
    expect(messages(third.out)).toEqual(["completed c1"]);
    expect(third.out).not.toContain("more:");
  });

  it("leaves out what the project config filled in, which fills it in again when the line is followed", async () => {
    const project = tempDir("al-cli-more-config-");
    writeFileSync(join(project, "assembly-line.config.json"), JSON.stringify({ agent: agentDir, stateDir }));
    await inFolder(project, async () => {
      const first = await cli(["runs", "list", "--limit", "2"]);
      expect(first.code, first.err).toBe(0);
      expect(first.out).toMatch(/^more: assembly-line runs list --cursor \S+ --limit 2$/m);
      const second = await cli(printedCommand(first.out, "more:", "assembly-line"));
      expect(second.out.split("\n").filter((line) => line.startsWith("run_"))).toHaveLength(2);
    });
  });
});

describe("the commands a paused run prints to continue it", () => {
  it("name the --state-dir `run` was given, so the printed approve finds the run and completes it", async () => {
    const { agentDir, script } = notesAgent();
    const stateDir = join(agentDir, "..", "kept-elsewhere");
    const paused = await cli(["run", agentDir, "-m", "Remember to buy milk", "--model", script, "--state-dir", stateDir]);
    expect(paused.code, paused.err).toBe(3);
    const approve = printedCommand(paused.out, "approve:", "npx assembly-line");
    expect(approve.slice(-4)).toEqual(["--agent", agentDir, "--state-dir", stateDir]);
    expect(printedCommand(paused.out, "deny:", "npx assembly-line").slice(-4)).toEqual(["--agent", agentDir, "--state-dir", stateDir]);
    const approved = await cli(approve);
    expect(approved.err).not.toContain("AL_ERR_RUN_NOT_FOUND");
    expect(approved.code, approved.err).toBe(0);
  });

  it("are as before without a --state-dir: --agent alone, quoted (the README's example line)", async () => {
    const { agentDir, script } = notesAgent();
    const paused = await cli(["run", agentDir, "-m", "Remember to buy milk", "--model", script]);
    expect(paused.code, paused.err).toBe(3);
    expect(paused.out).toMatch(new RegExp(`^  approve: npx assembly-line approve run_\\S+ call_0_0 --agent ${JSON.stringify(agentDir)}$`, "m"));
    expect(paused.out).not.toContain("--state-dir");
  });

  it("leave out the config's stateDir, which the followed command reads again", async () => {
    const { agentDir, script } = notesAgent();
    writeFileSync(join(agentDir, "assembly-line.config.json"), JSON.stringify({ stateDir: "./kept" }));
    await inFolder(agentDir, async () => {
      const paused = await cli(["run", ".", "-m", "Remember to buy milk", "--model", script]);
      expect(paused.code, paused.err).toBe(3);
      expect(paused.out).not.toContain("--state-dir");
      const approved = await cli(printedCommand(paused.out, "approve:", "npx assembly-line"));
      expect(approved.code, approved.err).toBe(0);
    });
  });

  it("from `automations run`, name the agent folder and the --state-dir it was given", async () => {
    const { agentDir, script } = notesAgent();
    mkdirSync(join(agentDir, "automations"));
    writeFileSync(join(agentDir, "automations/milk.ts"), `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 3600000 }, message: "Remember to buy milk" });\n`);
    expect((await cli(["build", agentDir])).code).toBe(0);
    const stateDir = join(agentDir, "..", "automation-state");
    const paused = await cli(["automations", "run", "milk", "--agent", agentDir, "--state-dir", stateDir, "--model", script]);
    expect(paused.code, paused.err).toBe(3);
    const approve = printedCommand(paused.out, "approve:", "npx assembly-line");
    expect(approve.slice(-4)).toEqual(["--agent", agentDir, "--state-dir", stateDir]);
    const approved = await cli(approve);
    expect(approved.code, approved.err).toBe(0);
  });

  describe("for a run served from --base-url", () => {
    let server: ScriptedModelServer & { baseUrl: string };
    const key = process.env.OPENAI_API_KEY;
    beforeEach(async () => {
      server = await startOpenAIChatServer({ apiKey: "sk-test" });
      process.env.OPENAI_API_KEY = "sk-test";
      server.toolCalls([{ id: "call_note_1", name: "record_note", argumentChunks: ['{"note": "Buy milk"}'] }]);
      server.text(["Noted."]);
    });
    afterEach(async () => {
      await server.close();
      if (key === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = key;
    });

    it("name the --base-url and --api `run` was given, so the printed approve reaches the server the run started on and completes it", async () => {
      const { agentDir } = notesAgent();
      const paused = await cli(["run", agentDir, "-m", "Remember to buy milk", "--model", "openai/gpt-4o-mini", "--base-url", server.baseUrl, "--api", "openai-completions"]);
      expect(paused.code, paused.err + paused.out).toBe(3);
      const approve = printedCommand(paused.out, "approve:", "npx assembly-line");
      expect(approve.slice(-6)).toEqual(["--agent", agentDir, "--base-url", server.baseUrl, "--api", "openai-completions"]);
      const approved = await cli(approve);
      expect(approved.code, `${approve.join(" ")}\n${approved.err}\n${approved.out}`).toBe(0);
      // Both model calls went to the server the run started on, not to the catalog's.
      expect(server.requests).toHaveLength(2);
    }, 60_000);
  });
});

/** The first `assembly-line ...` command in backticks in a fix, as shell words. */
function fixCommand(fix: string): string[] {
  const command = /`(assembly-line [^`]+)`/.exec(fix)?.[1];
  expect(command, fix).toBeDefined();
  return command!.match(/"(?:[^"\\]|\\.)*"|\S+/g)!.slice(1).map((word) => (word.startsWith('"') ? (JSON.parse(word) as string) : word));
}

describe("the fix of a refused run id or run state", () => {
  it("names the run and the --agent and --state-dir the command was given, so the printed command reaches the same runs", async () => {
    const { agentDir, script } = notesAgent();
    const stateDir = join(agentDir, "..", "kept");
    const done = await cli(["run", agentDir, "-m", "Remember to buy milk", "--model", script, "--approve", "all", "--state-dir", stateDir, "--json"]);
    expect(done.code, done.err).toBe(0);
    const runId = JSON.parse(done.out).data.result.runId as string;

    // A mistyped run id: "List runs with `assembly-line runs list ...`".
    const missing = JSON.parse((await cli(["runs", "show", "run_typo", "--agent", agentDir, "--state-dir", stateDir, "--json"])).out).error;
    expect(missing.code).toBe("AL_ERR_RUN_NOT_FOUND");
    expect(fixCommand(missing.fix)).toEqual(["runs", "list", "--agent", agentDir, "--state-dir", stateDir]);
    const listed = await cli([...fixCommand(missing.fix), "--json"]);
    expect(listed.code, listed.out).toBe(0);
    expect(JSON.parse(listed.out).data.runs.map((run: { id: string }) => run.id)).toContain(runId);

    // A finished run approved again: "Check `assembly-line runs show <id>`", with the run's id.
    const again = JSON.parse((await cli(["approve", runId, "--agent", agentDir, "--state-dir", stateDir, "--json"])).out).error;
    expect(fixCommand(again.fix)).toEqual(["runs", "show", runId, "--agent", agentDir, "--state-dir", stateDir]);
    const shown = await cli([...fixCommand(again.fix), "--json"]);
    expect(shown.code, shown.out).toBe(0);
    expect(JSON.parse(shown.out).data.result).toMatchObject({ runId, status: "completed" });
  }, 60_000);
});
