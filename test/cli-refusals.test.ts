import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../plugins/node/src/cli/main.js";

// What the command line refuses, and that a refused command leaves what is kept as it was.

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const work = mkdtempSync(join(tmpdir(), "al-cli-refusals-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(argv: string[]): Promise<Captured> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => void out.push(line), err: (line) => void err.push(line), errChunk: (text) => void err.push(text) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** The bin in a child process: for what only the process shows (its real stdout and stderr). */
async function spawnCli(args: string[]): Promise<Captured> {
  const env = { ...process.env };
  // The default log level, and no model key: the notes agent's run fails without one.
  delete env.ASSEMBLY_LINE_LOG_LEVEL;
  delete env.OPENAI_API_KEY;
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env, timeout: 40_000, killSignal: "SIGKILL" }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

function write(dir: string, files: Record<string, string>): string {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

function notesCopy(name: string): string {
  const dir = join(work, name);
  cpSync(join(root, "examples/notes-agent"), dir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  return dir;
}

const tool = (body: string) => `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "A probe.", inputSchema: { type: "object", properties: {} }, async execute() { ${body} } });\n`;

let notes: string;
let milk: string;
let probe: string;

beforeAll(async () => {
  notes = notesCopy("notes");
  milk = `scripted:${join(notes, "conversations/remember-milk.json")}`;
  probe = write(join(work, "probe"), {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "probe", model: "scripted:unused", defaultTools: ["noop", "chatty"], budgets: { maxToolCalls: 1, onExceeded: "pause" } });\n`,
    "tools/noop.ts": tool("return { ok: true };"),
    "tools/chatty.ts": tool('console.log("chatty ran"); process.stdout.write("chatty wrote\\n"); return { ok: true };'),
    "hooks/noisy.ts": `import { defineHook } from "@assemblyline-agents/core";\nexport default defineHook({ events: { "run.completed"() { throw new Error("hook broke"); } } });\n`,
    "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }),
    "loop.json": JSON.stringify({ loop: true, turns: [{ toolCalls: [{ name: "noop", input: {} }] }] }),
    "chatty.json": JSON.stringify({ turns: [{ toolCalls: [{ name: "chatty", input: {} }] }, { text: "done" }] }),
    "ask.json": JSON.stringify({ turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which shop?" } }] }, { text: "Got it." }] }),
  });
  expect((await cli(["build", notes])).code).toBe(0);
  expect((await cli(["build", probe])).code).toBe(0);
}, 120_000);

async function runIds(agent: string): Promise<string[]> {
  const listed = await cli(["runs", "list", "--agent", agent, "--limit", "100", "--json"]);
  return (JSON.parse(listed.stdout).data.runs as Array<{ id: string }>).map((run) => run.id);
}

async function shown(runId: string, agent: string): Promise<{ result: { status: string; pendingBudget?: { limit: number } }; events: unknown[] }> {
  return JSON.parse((await cli(["runs", "show", runId, "--agent", agent, "--json"])).stdout).data;
}

describe("a flag given no value", () => {
  it("is refused rather than taking the next flag as its value, and starts no run", async () => {
    const before = await runIds(probe);
    const run = await cli(["run", probe, "-m", "--json", "--model", `scripted:${join(probe, "hello.json")}`]);
    expect(run.code).toBe(2);
    const error = JSON.parse(run.stdout).error;
    expect(error).toMatchObject({ code: "AL_ERR_CLI_USAGE", message: "option '-m, --message <text>' argument missing: --json is an option, not its value" });
    expect(error.fix).toContain("--message=<value>");
    expect(await runIds(probe)).toEqual(before);

    const listing = await cli(["runs", "list", "--agent", "--json"]);
    expect(listing.code).toBe(2);
    expect(JSON.parse(listing.stdout).error.message).toBe("option '--agent <dir>' argument missing: --json is an option, not its value");
    const text = await cli(["runs", "list", "--limit", "--agent", probe]);
    expect(text.code).toBe(2);
    expect(text.stderr).toContain("option '--limit <n>' argument missing: --agent is an option, not its value");

    // A value that starts with "-", given with "=", is a value.
    const dashed = await cli(["run", probe, "--message=--json", "--model", `scripted:${join(probe, "hello.json")}`, "--json"]);
    expect(dashed.code).toBe(0);
    expect(JSON.parse(dashed.stdout).data.result.status).toBe("completed");
  });
});

describe("the agent folder of a command on kept runs", () => {
  it("is named when it does not exist or was never built, with the command that fixes it", async () => {
    const nowhere = join(work, "nowhere");
    const missing = await cli(["runs", "list", "--agent", nowhere]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`AL_ERR_CLI_USAGE: --agent ${nowhere} does not exist`);
    expect(missing.stderr).not.toContain("manifest");

    const unbuilt = write(join(work, "unbuilt"), { "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "unbuilt", model: "scripted:unused" });\n` });
    for (const argv of [["runs", "list"], ["approve", "run_x"], ["skills", "list"], ["automations", "list"]]) {
      const result = await cli([...argv, "--agent", unbuilt, "--json"]);
      expect(result.code, argv.join(" ")).toBe(1);
      const error = JSON.parse(result.stdout).error;
      expect(error.code).toBe("AL_ERR_MANIFEST_MISSING");
      expect(error.message).toContain(`--agent ${unbuilt} has no build`);
      expect(error.fix).toContain(`assembly-line build "${unbuilt}"`);
      // Not the fix for `start`, which is given the build's folder.
      expect(error.fix).not.toContain("pass <agentDir>/.assembly-line");
    }
    // Refused before anything was written into it.
    expect(existsSync(join(unbuilt, ".assembly-line"))).toBe(false);
  });
});

describe("a --state-dir that keeps another agent's runs", () => {
  it("is refused for approve, deny, answer, resume and migrate, leaving the run as it was; runs list names the run's agent", async () => {
    // Another agent with the same tools, whose build would otherwise take the run over.
    const other = notesCopy("other-notes");
    writeFileSync(join(other, "agent.ts"), readFileSync(join(other, "agent.ts"), "utf8").replace('id: "notes-agent"', 'id: "other-notes"'));
    expect((await cli(["build", other])).code).toBe(0);
    const paused = JSON.parse((await cli(["run", notes, "-m", "Remember to buy milk", "--model", milk, "--json"])).stdout).data.result;
    const before = await shown(paused.runId, notes);
    const state = join(notes, ".assembly-line/state");

    for (const argv of [
      ["approve", paused.runId],
      ["deny", paused.runId, paused.pendingApprovals[0].callId],
      ["answer", paused.runId, "yes"],
      ["resume", paused.runId],
      ["runs", "migrate", paused.runId, "--to", "current"],
    ]) {
      const refused = await cli([...argv, "--agent", other, "--state-dir", state, "--json"]);
      expect(refused.code, argv.join(" ")).toBe(2);
      const error = JSON.parse(refused.stdout).error;
      expect(error.code).toBe("AL_ERR_CLI_USAGE");
      expect(error.message).toContain(`run ${paused.runId} belongs to agent "notes-agent", not to "other-notes"`);
      expect(error.message).toContain(`--state-dir ${state}`);
    }
    expect(await shown(paused.runId, notes)).toEqual(before);

    const listed = await cli(["runs", "list", "--agent", other, "--state-dir", state]);
    expect(listed.stdout).toMatch(new RegExp(`${paused.runId}\\s+waiting_approval\\s+rev_\\w+ \\(agent notes-agent\\)`));
    // Its own agent decides it as usual.
    expect((await cli(["approve", paused.runId, "--agent", notes, "--state-dir", state])).code).toBe(0);
  });
});

describe("approve and deny with a callId", () => {
  it("refuse a callId on a run that waits for a budget decision, and leave the budget as it was", async () => {
    const paused = JSON.parse((await cli(["run", probe, "-m", "loop", "--model", `scripted:${join(probe, "loop.json")}`, "--json"])).stdout).data.result;
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxToolCalls", limit: 1 } });
    const before = await shown(paused.runId, probe);

    for (const command of ["approve", "deny"]) {
      const refused = await cli([command, paused.runId, "call_0_0", "--agent", probe, "--json"]);
      expect(refused.code, command).toBe(1);
      const error = JSON.parse(refused.stdout).error;
      expect(error).toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND", message: `run ${paused.runId} has no pending approval call_0_0: it waits for a decision on its maxToolCalls budget, not on a tool call` });
      expect(error.fix).toContain(`assembly-line ${command} ${paused.runId}`);
    }
    expect(await shown(paused.runId, probe)).toEqual(before);

    const extended = JSON.parse((await cli(["approve", paused.runId, "--agent", probe, "--json"])).stdout).data.result;
    expect(extended.pendingBudget.limit).toBe(2);
  });

  it("name the subagent run whose budget a parent waits on", async () => {
    const delegator = write(join(work, "delegator"), {
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "delegator", model: "scripted:unused" });\n`,
      "subagents/worker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Loops.", budgets: { maxToolCalls: 1, onExceeded: "pause" } });\n`,
      "subagents/worker/tools/noop.ts": `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "A probe.", defaultEnabled: true, inputSchema: { type: "object", properties: {} }, async execute() { return { ok: true }; } });\n`,
      "spawn.json": JSON.stringify({
        turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "worker", task: "Loop." } }] }, { text: "done" }],
        subagents: { worker: { loop: true, turns: [{ toolCalls: [{ name: "noop", input: {} }] }] } },
      }),
    });
    const paused = JSON.parse((await cli(["run", delegator, "-m", "go", "--model", `scripted:${join(delegator, "spawn.json")}`, "--json"])).stdout).data.result;
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxToolCalls" }, waitingOn: { subagent: "worker" } });
    const refused = await cli(["approve", paused.runId, "call_0_0", "--agent", delegator, "--json"]);
    expect(JSON.parse(refused.stdout).error).toMatchObject({
      code: "AL_ERR_APPROVAL_NOT_FOUND",
      message: `run ${paused.runId} has no pending approval call_0_0: it waits for a decision on its subagent worker's (run ${paused.waitingOn.runId}) maxToolCalls budget, not on a tool call`,
    });
  });
});

describe("an empty answer", () => {
  it("is refused, and the run still waits for its answer", async () => {
    const asked = JSON.parse((await cli(["run", notes, "-m", "buy milk", "--model", `scripted:${join(probe, "ask.json")}`, "--json"])).stdout).data.result;
    expect(asked.status).toBe("waiting_input");
    for (const text of ["", "   "]) {
      const refused = await cli(["answer", asked.runId, text, "--agent", notes]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("AL_ERR_CLI_USAGE: the answer is empty");
    }
    expect((await shown(asked.runId, notes)).result.status).toBe("waiting_input");

    const before = await runIds(notes);
    const inline = await cli(["run", notes, "-m", "buy milk", "--model", `scripted:${join(probe, "ask.json")}`, "--answer", ""]);
    expect(inline.code).toBe(2);
    expect(inline.stderr).toContain("AL_ERR_CLI_USAGE: --answer is empty");
    expect(await runIds(notes)).toEqual(before);
    expect((await cli(["answer", asked.runId, "the corner shop", "--agent", notes])).code).toBe(0);
  });
});

describe("runs list paging", () => {
  it("refuses a --cursor the store never printed and a --limit that is not digits, as usage errors naming the flag", async () => {
    const cursor = await cli(["runs", "list", "--agent", probe, "--cursor", "garbage", "--json"]);
    expect(cursor.code).toBe(2);
    expect(JSON.parse(cursor.stdout).error).toMatchObject({ code: "AL_ERR_CLI_USAGE", message: "--cursor garbage is not a cursor this state store printed" });
    const limit = await cli(["runs", "list", "--agent", probe, "--limit", "1e1"]);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain("--limit 1e1 is not a positive integer");
  });
});

describe("test --replay-stress", () => {
  it("names --conversation when its file is missing, before building the agent", async () => {
    const unbuilt = notesCopy("replay-unbuilt");
    const missing = join(work, "no-such-conversation.json");
    const result = await cli(["test", unbuilt, "--conversation", missing, "--replay-stress", "--json"]);
    expect(result.code).toBe(1);
    const error = JSON.parse(result.stdout).error;
    expect(error.code).toBe("AL_ERR_SCRIPTED_MODEL");
    expect(error.message).toContain(`--conversation ${missing}`);
    expect(error.fix).not.toContain("--model");
    expect(existsSync(join(unbuilt, ".assembly-line"))).toBe(false);
  });
});

describe("output a reader relies on", () => {
  it("--json: what a tool prints with console.log or process.stdout.write goes to stderr, and stdout is the one envelope", async () => {
    const result = await spawnCli(["run", probe, "-m", "hi", "--model", `scripted:${join(probe, "chatty.json")}`, "--json"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, data: { result: { status: "completed" } } });
    expect(result.stderr).toContain("chatty ran");
    expect(result.stderr).toContain("chatty wrote");
  });

  it("a timeline: the runtime's log lines are readable lines on stderr, never raw JSON, and a run's end is not logged twice", async () => {
    const completed = await spawnCli(["run", probe, "-m", "hi", "--model", `scripted:${join(probe, "hello.json")}`]);
    expect(completed.code).toBe(0);
    expect(completed.stderr).toMatch(/^\d\d:\d\d:\d\d WARN {2}hook handler threw \[hook\.failed\].*err=hook broke/m);
    const budget = await spawnCli(["run", probe, "-m", "hi", "--model", `scripted:${join(probe, "loop.json")}`]);
    expect(budget.code).toBe(3);
    const failed = await spawnCli(["run", notes, "-m", "hi"]);
    expect(failed.code).toBe(1);
    for (const result of [completed, budget, failed]) expect(result.stderr.split("\n").filter((line) => line.startsWith("{"))).toEqual([]);
    // The failure is told once, by the command.
    expect(failed.stderr.match(/OPENAI_API_KEY is not set/g)).toHaveLength(1);
  });
});

describe("runs migrate", () => {
  it("says a paused run already on the current build has nothing to move, and how to go on", async () => {
    const paused = JSON.parse((await cli(["run", notes, "-m", "Remember to buy milk", "--model", milk, "--json"])).stdout).data.result;
    const before = await shown(paused.runId, notes);
    const refused = await cli(["runs", "migrate", paused.runId, "--to", "current", "--agent", notes, "--json"]);
    expect(refused.code).toBe(1);
    const error = JSON.parse(refused.stdout).error;
    expect(error.code).toBe("AL_ERR_RUN_MIGRATION");
    expect(error.message).toMatch(new RegExp(`^run ${paused.runId} already runs on the current build rev_\\w+: there is nothing to move$`));
    expect(error.fix).toContain("assembly-line build");
    expect(error.fix).not.toContain("change the tool back");
    expect(await shown(paused.runId, notes)).toEqual(before);
  });
});

describe("a state folder beside gateway.ts's state", () => {
  it("is refused, naming the plugin that keeps the runs, and creates no folder", async () => {
    // In place: its gateway.ts imports a workspace package (the jsonfile example plugin).
    const dir = join(root, "examples/gateway-agent");
    const stateDir = join(work, "never-used-state");
    const result = await cli(["run", dir, "--message", "hi", "--model", `scripted:${join(dir, "conversations/greet-ada.json")}`, "--state-dir", stateDir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`AL_ERR_CLI_USAGE: the state folder ${stateDir} would not be used: gateway.ts keeps runs in its state adapter (jsonfile)`);
    expect(existsSync(stateDir)).toBe(false);
  });
});
