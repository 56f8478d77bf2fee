import { execFile, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../plugins/node/src/cli/main.js";
import { buildProgram } from "../plugins/node/src/cli/program.js";
import { takesColor } from "../plugins/node/src/cli/io.js";
import { exitCodeOf } from "../plugins/node/src/cli/report.js";

/** The CLI's own commander Command (the node plugin's commander, not whichever one the root resolves). */
type Command = ReturnType<typeof buildProgram>;

const root = resolve(import.meta.dirname, "..");
const bin = join(root, "plugins/node/bin/assembly-line.js");
const version = (JSON.parse(readFileSync(join(root, "plugins/node/package.json"), "utf8")) as { version: string }).version;
const work = mkdtempSync(join(tmpdir(), "al-cli-conventions-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every command the line has; a command dropped or renamed fails here. */
const COMMANDS = [
  "build",
  "run",
  "runs",
  "runs list",
  "runs show",
  "runs migrate",
  "approve",
  "deny",
  "answer",
  "resume",
  "test",
  "automations",
  "automations list",
  "automations run",
  "automations pause",
  "automations resume",
  "skills",
  "skills list",
  "skills show",
  "skills diff",
  "skills reset",
  "dev",
  "start",
  "deploy",
  "plugins",
  "plugins list",
  "plugins search",
  "plugins info",
  "plugins add",
  "plugins new",
  "plugins verify",
  "config",
  "config show",
];

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the command line in this process with an IO that keeps what it prints. */
async function cli(argv: string[], terminal: { tty?: boolean; color?: boolean } = {}): Promise<Captured> {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (line: string) => void out.push(line), err: (line: string) => void err.push(line), errChunk: (text: string) => void err.push(text), errTTY: terminal.tty === true, outColor: terminal.color === true, errColor: terminal.color === true };
  const code = await main(argv, io);
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** The bin in a child process, for what depends on the process: the working folder, env, exit code. */
async function spawnCli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Captured> {
  return promisify(execFile)(process.execPath, [bin, ...args], { cwd: options.cwd ?? root, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error", ...options.env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout: stdout.trimEnd(), stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout.trimEnd(), stderr: error.stderr }),
  );
}

/** One JSON document on stdout, `{ ok: true, data }`: its data. */
function okEnvelope(result: Captured, exit = 0): any {
  expect(result.code, result.stderr + result.stdout).toBe(exit);
  expect(result.stdout.split("\n")).toHaveLength(1);
  const body = JSON.parse(result.stdout) as { ok: boolean; data: unknown };
  expect(Object.keys(body).sort()).toEqual(["data", "ok"]);
  expect(body.ok).toBe(true);
  return body.data;
}

/** One JSON document on stdout, `{ ok: false, error: { code, message, fix } }`. */
function errorEnvelope(result: Captured, code: string, exit: number): { code: string; message: string; fix: string | null } {
  expect(result.code, result.stderr + result.stdout).toBe(exit);
  expect(result.stdout.split("\n")).toHaveLength(1);
  const body = JSON.parse(result.stdout) as { ok: boolean; error: { code: string; message: string; fix: string | null } };
  expect(Object.keys(body).sort()).toEqual(["error", "ok"]);
  expect(body.ok).toBe(false);
  expect(Object.keys(body.error).sort()).toEqual(["code", "fix", "message"]);
  expect(body.error.code).toBe(code);
  expect(body.error.message).not.toMatch(/^AL_ERR_/);
  expect(body.error.fix === null || typeof body.error.fix === "string").toBe(true);
  return body.error;
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

const AGENT = (extra = "") => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "small", model: "scripted:unused"${extra} });\n`;

let notes: string;
let notesScript: string;
let small: string;

beforeAll(async () => {
  notes = notesCopy("notes");
  notesScript = `scripted:${join(notes, "conversations/remember-milk.json")}`;
  small = write(join(work, "small"), {
    "agent.ts": AGENT(', selfImprovement: { writable: true }'),
    "tools/explode.ts": `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "Always fails.", inputSchema: { type: "object", properties: {} }, defaultEnabled: true, async execute() { throw new Error("boom"); } });\n`,
    "automations/tick.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 60000 }, message: "tick" });\n`,
    "skills/audit/SKILL.md": "---\ndescription: Audit entries.\n---\nCheck receipts.\n",
    "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }),
    "explode.json": JSON.stringify({ turns: [{ toolCalls: [{ name: "explode", input: {} }] }, { text: "unreachable" }] }),
    "ask.json": JSON.stringify({ turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which shop?" } }] }, { text: "Got it." }] }),
    "bad.json": JSON.stringify({ turns: [{ toolCalls: [] }] }),
  });
  expect((await cli(["build", notes])).code).toBe(0);
  expect((await cli(["build", small])).code).toBe(0);
}, 120_000);

describe("help and version", () => {
  it("describes every command and subcommand with --help, usage and examples, and exits 0", async () => {
    const program = buildProgram({ out: () => {}, err: () => {} }, {}, { code: 0 });
    const found: string[] = [];
    const walk = (command: Command, path: string[]) => {
      for (const child of command.commands) {
        if (child.name() === "help") continue;
        found.push([...path, child.name()].join(" "));
        walk(child, [...path, child.name()]);
      }
    };
    walk(program, []);
    expect(found.sort()).toEqual([...COMMANDS].sort());
    // Every command that does something (not a group) takes --json.
    const leaves: Command[] = [];
    const collect = (command: Command) => (command.commands.length === 0 ? leaves.push(command) : command.commands.filter((child) => child.name() !== "help").forEach(collect));
    program.commands.filter((child) => child.name() !== "help").forEach(collect);
    expect(leaves.filter((leaf) => !leaf.options.some((option) => option.long === "--json")).map((leaf) => leaf.name())).toEqual([]);

    for (const path of ["", ...COMMANDS]) {
      const words = path === "" ? [] : path.split(" ");
      const shown = await cli([...words, "--help"]);
      expect(shown.code, path).toBe(0);
      expect(shown.stdout, path).toContain(`Usage: assembly-line${path ? ` ${path}` : ""}`);
      expect(shown.stdout, path).toContain("Examples:");
      expect(shown.stdout, path).toContain(`$ assembly-line ${words[0] ?? ""}`);
      // `help <command>` says the same.
      if (words.length === 1) expect((await cli(["help", ...words])).stdout).toBe(shown.stdout);
    }
  });

  it("documents the exit codes and the project config in the top-level help", async () => {
    const { stdout } = await cli(["--help"]);
    expect(stdout).toMatch(/Exit codes: 0 ok, 1 failed, 2 usage error, 3 run paused awaiting a decision, 4 run left unfinished/);
    expect(stdout).toContain("assembly-line.config.{ts,js,json}");
  });

  it("prints the package version with --version and -v, from the installed bin too", async () => {
    expect(await cli(["--version"])).toEqual({ code: 0, stdout: version, stderr: "" });
    expect((await cli(["-v"])).stdout).toBe(version);
    const spawned = await spawnCli(["--version"]);
    expect(spawned).toEqual({ code: 0, stdout: version, stderr: "" });
  });

  it("prints the version, a help text and a group's missing command as the one envelope with --json", async () => {
    expect(okEnvelope(await cli(["--version", "--json"]))).toEqual({ version });
    const help = okEnvelope(await cli(["runs", "list", "--help", "--json"]));
    expect(help.help).toMatch(/^Usage: assembly-line runs list \[options\]/);
    const missing = errorEnvelope(await cli(["runs", "--json"]), "AL_ERR_CLI_USAGE", 2);
    expect(missing.message).toBe("assembly-line runs needs a command");
  });

  it("answers `help` with the overview, and `help <unknown>` as a usage error", async () => {
    const overview = await cli(["help"]);
    expect(overview.code).toBe(0);
    expect(overview.stdout).toContain("Usage: assembly-line");
    const unknown = await cli(["help", "nothing"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/AL_ERR_CLI_USAGE: unknown command 'nothing'/);
  });

  it("stops quietly when the reader closes the pipe early (| head)", async () => {
    const child = spawn(process.execPath, [bin, "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  });

  it("finishes the command when the reader closes the pipe early: a run piped into `head` still completes", async () => {
    const agent = write(join(work, "piped"), { "agent.ts": AGENT(), "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }) });
    const child = spawn(process.execPath, [bin, "run", agent, "-m", "hi", "--model", `scripted:${join(agent, "hello.json")}`], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(code).toBe(0);
    const listed = okEnvelope(await cli(["runs", "list", "--agent", agent, "--json"]));
    expect(listed.runs.map((run: { status: string }) => run.status)).toEqual(["completed"]);
  }, 60_000);

  it("prints its help and exits 2 when no command is given", async () => {
    const bare = await cli([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("Usage: assembly-line");
    const group = await cli(["runs"]);
    expect(group.code).toBe(2);
    expect(group.stderr).toContain("Usage: assembly-line runs");
    expect(group.stderr).toMatch(/AL_ERR_CLI_USAGE: assembly-line runs needs a command/);
  });
});

describe("typos", () => {
  it("suggests the command, subcommand or flag that was meant, and exits 2", async () => {
    const command = await cli(["rnu", notes]);
    expect(command.code).toBe(2);
    expect(command.stderr).toMatch(/AL_ERR_CLI_USAGE: unknown command 'rnu'\n\(Did you mean run\?\)/);
    expect(command.stderr).toContain("fix: See assembly-line --help.");

    const sub = await cli(["runs", "lst"]);
    expect(sub.code).toBe(2);
    expect(sub.stderr).toMatch(/Did you mean list\?/);
    expect(sub.stderr).toContain("See assembly-line runs --help.");

    const flag = await cli(["run", notes, "--mesage", "hi"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/unknown option '--mesage'\n\(Did you mean --message\?\)/);

    const json = errorEnvelope(await cli(["plugins", "serch", "state", "--json"]), "AL_ERR_CLI_USAGE", 2);
    expect(json.message).toMatch(/Did you mean search\?/);
  });

  it("refuses a missing required flag, a value outside its choices and an extra argument as usage errors", async () => {
    expect((await cli(["run", notes])).stderr).toMatch(/AL_ERR_CLI_USAGE: missing --message/);
    expect((await cli(["deploy", notes])).stderr).toMatch(/AL_ERR_CLI_USAGE: missing --target/);
    const choice = await cli(["runs", "list", "--agent", notes, "--status", "done"]);
    expect(choice.code).toBe(2);
    expect(choice.stderr).toMatch(/Allowed choices are queued, running, waiting_approval, waiting_input, completed, failed/);
    const extra = await cli(["build", notes, "extra"]);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toMatch(/too many arguments/);
  });
});

describe("exit codes", () => {
  it("0 for a completed run, 1 for a failed one, 3 for one paused awaiting a decision, 2 for a usage error", async () => {
    expect((await cli(["run", small, "-m", "hi", "--model", `scripted:${join(small, "hello.json")}`])).code).toBe(0);
    const failed = await cli(["run", small, "-m", "hi", "--model", `scripted:${join(small, "explode.json")}`]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/run run_\S+ failed/);
    const paused = await cli(["run", notes, "-m", "Remember to buy milk", "--model", notesScript]);
    expect(paused.code).toBe(3);
    expect(paused.stdout).toMatch(/waits for approval of record_note/);
    const asked = await cli(["run", notes, "-m", "buy milk", "--model", `scripted:${join(small, "ask.json")}`]);
    expect(asked.code).toBe(3);
    expect((await cli(["run", notes, "-m", "x", "--approve", "maybe"])).code).toBe(2);
    // An error that is not a usage error: 1.
    expect((await cli(["runs", "show", "run_missing", "--agent", notes])).code).toBe(1);
  });

  it("1 and AL_ERR_CLI_UNEXPECTED, with the stack, for an error that carries no code", async () => {
    const err: string[] = [];
    const code = await main(["--version"], {
      out: () => {
        throw new TypeError("stdout is gone");
      },
      err: (line) => void err.push(line),
    });
    expect(code).toBe(1);
    expect(err.join("\n")).toMatch(/AL_ERR_CLI_UNEXPECTED: TypeError: stdout is gone\n\s+at /);
  });

  it("4 for a run left queued or running", () => {
    expect(exitCodeOf({ runId: "run_x", status: "running" } as never)).toBe(4);
    expect(exitCodeOf({ runId: "run_x", status: "queued" } as never)).toBe(4);
  });

  it("are the bin's process exit codes", async () => {
    const paused = await spawnCli(["run", notes, "-m", "Remember to buy milk", "--model", notesScript, "--json"]);
    expect(paused.code).toBe(3);
    expect(JSON.parse(paused.stdout).data.result.status).toBe("waiting_approval");
    expect((await spawnCli(["frobnicate"])).code).toBe(2);
  });
});

describe("the --json envelope", () => {
  it("build", async () => {
    expect(okEnvelope(await cli(["build", small, "--json"]))).toMatchObject({ agentId: "small", agentRevision: expect.stringMatching(/^rev_/), tools: ["explode"] });
    errorEnvelope(await cli(["build", join(work, "nowhere"), "--json"]), "AL_ERR_AGENT_DEFINITION", 1);
  });

  it("run: the result and the events it printed; a run that failed is data, a command that failed is the error", async () => {
    const data = okEnvelope(await cli(["run", notes, "-m", "Remember to buy milk", "--model", notesScript, "--json"]), 3);
    expect(data.result).toMatchObject({ status: "waiting_approval", pendingApprovals: [{ toolName: "record_note" }] });
    expect(data.events.map((event: { type: string }) => event.type)).toContain("approval.requested");
    const failed = okEnvelope(await cli(["run", small, "-m", "x", "--model", `scripted:${join(small, "explode.json")}`, "--json"]), 1);
    expect(failed.result).toMatchObject({ status: "failed", error: { code: "AL_ERR_TOOL_FAILED" } });
    // A script that cannot be read is the command's error, refused before any run exists.
    errorEnvelope(await cli(["run", small, "-m", "x", "--model", `scripted:${join(small, "bad.json")}`, "--json"]), "AL_ERR_SCRIPTED_MODEL", 1);
    const error = errorEnvelope(await cli(["run", join(work, "nowhere"), "-m", "x", "--json"]), "AL_ERR_AGENT_DEFINITION", 1);
    expect(error.fix).toEqual(expect.any(String));
    expect(error.message).not.toContain("fix:");
    errorEnvelope(await cli(["run", small, "-m", "x", "--base-url", "http://127.0.0.1:9/v1", "--json"]), "AL_ERR_CLI_USAGE", 2);
  });

  it("runs list pages with --limit and --cursor, and returns nextCursor", async () => {
    const agent = write(join(work, "paging"), { "agent.ts": AGENT(), "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }) });
    for (const message of ["one", "two", "three"]) expect((await cli(["run", agent, "-m", message, "--model", `scripted:${join(agent, "hello.json")}`])).code).toBe(0);
    const first = okEnvelope(await cli(["runs", "list", "--agent", agent, "--limit", "2", "--json"]));
    expect(first.runs).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = okEnvelope(await cli(["runs", "list", "--agent", agent, "--limit", "2", "--cursor", first.nextCursor, "--json"]));
    expect(second.runs).toHaveLength(1);
    expect(second.nextCursor).toBeNull();
    const ids = [...first.runs, ...second.runs].map((run: { id: string }) => run.id);
    expect(new Set(ids).size).toBe(3);
    expect([...first.runs, ...second.runs].map((run: { input: { message: string } }) => run.input.message).sort()).toEqual(["one", "three", "two"]);
    const text = await cli(["runs", "list", "--agent", agent, "--limit", "2"]);
    expect(text.stdout).toContain(`more: assembly-line runs list --cursor ${first.nextCursor} --limit 2`);
    errorEnvelope(await cli(["runs", "list", "--agent", agent, "--limit", "0", "--json"]), "AL_ERR_CLI_USAGE", 2);
  });

  it("runs show, runs migrate, approve, deny, answer and resume", async () => {
    const agent = notesCopy("decisions");
    const script = `scripted:${join(agent, "conversations/remember-milk.json")}`;
    const pause = async () => okEnvelope(await cli(["run", agent, "-m", "Remember to buy milk", "--model", script, "--json"]), 3).result as { runId: string; pendingApprovals: Array<{ callId: string }> };

    const first = await pause();
    const shown = okEnvelope(await cli(["runs", "show", first.runId, "--agent", agent, "--json"]));
    expect(shown).toMatchObject({ result: { status: "waiting_approval" }, toolCalls: expect.any(Array), usage: expect.any(Array) });
    errorEnvelope(await cli(["runs", "show", "run_missing", "--agent", agent, "--json"]), "AL_ERR_RUN_NOT_FOUND", 1);

    const resumed = okEnvelope(await cli(["resume", first.runId, "--agent", agent, "--json"]), 3);
    expect(resumed.result.status).toBe("waiting_approval");
    errorEnvelope(await cli(["resume", "run_missing", "--agent", agent, "--json"]), "AL_ERR_RUN_NOT_FOUND", 1);

    const record = join(agent, "tools/record_note.ts");
    writeFileSync(record, readFileSync(record, "utf8").replace("return { recorded: true, key };", 'return { recorded: true, key, build: "second" };'));
    expect((await cli(["build", agent])).code).toBe(0);
    errorEnvelope(await cli(["runs", "migrate", first.runId, "--agent", agent, "--json"]), "AL_ERR_CLI_USAGE", 2);
    expect(okEnvelope(await cli(["runs", "migrate", first.runId, "--to", "current", "--agent", agent, "--json"])).result.status).toBe("waiting_approval");

    const approved = okEnvelope(await cli(["approve", first.runId, first.pendingApprovals[0]!.callId, "--agent", agent, "--json"]));
    expect(approved.result.status).toBe("completed");
    expect(approved.events.map((event: { type: string }) => event.type)).toContain("approval.granted");
    errorEnvelope(await cli(["approve", first.runId, "--agent", agent, "--json"]), "AL_ERR_RUN_NOT_RESUMABLE", 1);

    const second = await pause();
    const denied = okEnvelope(await cli(["deny", second.runId, "--reason", "not now", "--agent", agent, "--json"]));
    expect(denied.events.map((event: { type: string }) => event.type)).toContain("approval.denied");
    errorEnvelope(await cli(["deny", second.runId, "--agent", agent, "--json"]), "AL_ERR_RUN_NOT_RESUMABLE", 1);

    const asked = okEnvelope(await cli(["run", agent, "-m", "buy milk", "--model", `scripted:${join(small, "ask.json")}`, "--json"]), 3).result;
    // --call names the question: an answer meant for another is refused and this one stays open.
    errorEnvelope(await cli(["answer", asked.runId, "the corner shop", "--call", "call_other", "--agent", agent, "--json"]), "AL_ERR_APPROVAL_NOT_FOUND", 1);
    const answered = okEnvelope(await cli(["answer", asked.runId, "the corner shop", "--call", asked.question.callId, "--agent", agent, "--json"]));
    expect(answered.result).toMatchObject({ status: "completed", response: { text: "Got it." } });
    errorEnvelope(await cli(["answer", asked.runId, "again", "--agent", agent, "--json"]), "AL_ERR_RUN_NOT_RESUMABLE", 1);
  });

  it("test --replay-stress", async () => {
    const report = okEnvelope(await cli(["test", small, "--conversation", join(small, "hello.json"), "--replay-stress", "--json"]));
    expect(report).toMatchObject({ problems: [], recorded: { status: "completed" } });
    errorEnvelope(await cli(["test", small, "--conversation", join(small, "hello.json"), "--json"]), "AL_ERR_CLI_USAGE", 2);
  });

  it("automations list, run, pause and resume", async () => {
    const listed = okEnvelope(await cli(["automations", "list", "--agent", small, "--json"]));
    expect(listed.automations).toEqual([expect.objectContaining({ name: "tick", source: "static" })]);
    expect(okEnvelope(await cli(["automations", "pause", "tick", "--agent", small, "--json"]))).toMatchObject({ name: "tick", paused: true });
    expect(okEnvelope(await cli(["automations", "resume", "tick", "--agent", small, "--json"]))).toMatchObject({ name: "tick", paused: false });
    const ran = okEnvelope(await cli(["automations", "run", "tick", "--agent", small, "--model", `scripted:${join(small, "hello.json")}`, "--json"]));
    expect(ran.result).toMatchObject({ status: "completed", response: { text: "hello" } });
    errorEnvelope(await cli(["automations", "pause", "nope", "--agent", small, "--json"]), "AL_ERR_AUTOMATION_NOT_FOUND", 1);
  });

  it("skills list, show, diff and reset", async () => {
    expect(okEnvelope(await cli(["skills", "list", "--agent", small, "--json"])).skills).toEqual([expect.objectContaining({ name: "audit", description: "Audit entries." })]);
    expect(okEnvelope(await cli(["skills", "show", "audit", "--agent", small, "--json"]))).toMatchObject({ name: "audit", files: { "SKILL.md": expect.stringContaining("Check receipts.") } });
    expect(okEnvelope(await cli(["skills", "diff", "audit", "--agent", small, "--json"]))).toEqual({ name: "audit", seeded: true, patches: [] });
    expect(okEnvelope(await cli(["skills", "reset", "audit", "--agent", small, "--json"]))).toEqual(expect.any(Object));
    errorEnvelope(await cli(["skills", "show", "nope", "--agent", small, "--json"]), "AL_ERR_SKILL_NOT_FOUND", 1);
  });

  it("plugins list, search, info, new, verify and add, and a listing read back as a registry", async () => {
    const listing = okEnvelope(await cli(["plugins", "list", "--json"]));
    expect(listing.plugins.map((plugin: { id: string }) => plugin.id)).toContain("postgres");
    // What `plugins list --json` prints is an index --registry reads.
    const snapshot = join(work, "registry.json");
    writeFileSync(snapshot, (await cli(["plugins", "list", "--json"])).stdout);
    expect(okEnvelope(await cli(["plugins", "search", "postgres", "--registry", snapshot, "--json"])).plugins.map((plugin: { id: string }) => plugin.id)).toEqual(["postgres"]);
    expect(okEnvelope(await cli(["plugins", "info", "postgres", "--json"]))).toMatchObject({ plugin: { id: "postgres" }, fitsKernel: true });
    errorEnvelope(await cli(["plugins", "info", "kubernetes", "--json"]), "AL_ERR_PLUGIN_NOT_FOUND", 1);

    const scaffold = join(work, "acme-store");
    expect(okEnvelope(await cli(["plugins", "new", "@acme/assembly-line-store", "--slot", "state", "--dir", scaffold, "--json"]))).toMatchObject({ id: "store", slot: "state", dir: scaffold, files: expect.arrayContaining(["package.json"]) });
    errorEnvelope(await cli(["plugins", "new", "@acme/x", "--slot", "nowhere", "--dir", join(work, "x"), "--json"]), "AL_ERR_CLI_USAGE", 2);
    // A file where the folder should go: a usage error naming it, not a stack trace.
    const file = join(work, "not-a-folder.txt");
    writeFileSync(file, "x");
    expect(errorEnvelope(await cli(["plugins", "new", "@acme/y", "--slot", "blob", "--dir", file, "--json"]), "AL_ERR_CLI_USAGE", 2).message).toContain("is a file, not a folder");

    const report = okEnvelope(await cli(["plugins", "verify", join(root, "registry/test/fixtures/wrong-kernel-range"), "--json"]), 1);
    expect(report.ok).toBe(false);
    errorEnvelope(await cli(["plugins", "verify", "--options", "[1]", "--json"]), "AL_ERR_CLI_USAGE", 2);

    const project = write(join(work, "project"), { "package.json": JSON.stringify({ name: "project", private: true, dependencies: { "@assemblyline-agents/core": `file:${join(root, "plugin-sdk")}` } }) });
    const added = okEnvelope(await cli(["plugins", "add", join(root, "examples/third-party-plugin"), "--dir", project, "--offline", "--json"]));
    expect(added).toMatchObject({ package: "@acme/assembly-line-jsonfile", plugin: "jsonfile", gateway: expect.arrayContaining([expect.stringContaining("jsonFileState")]) });
    errorEnvelope(await cli(["plugins", "add", "local", "--dir", join(work, "no-project"), "--json"]), "AL_ERR_CLI_USAGE", 2);
  }, 120_000);

  it("config show", async () => {
    const data = okEnvelope(await cli(["config", "show", "--model", "openai/gpt-5.4-mini", "--json"]));
    expect(data.configFile).toBeNull();
    expect(data.settings.model).toEqual({ value: "openai/gpt-5.4-mini", source: "flag" });
    expect(data.settings.stateDir.source).toBe("default");
    const project = write(join(work, "broken-config"), { "assembly-line.config.json": JSON.stringify({ agnet: "./agent" }) });
    const broken = await spawnCli(["config", "show", "--json"], { cwd: project });
    const error = errorEnvelope(broken, "AL_ERR_CLI_CONFIG", 1);
    expect(error.message).toContain('unknown key "agnet"');
    const unreadable = write(join(work, "unreadable-config"), { "assembly-line.config.json": "{ agent: " });
    const notJson = errorEnvelope(await spawnCli(["runs", "list", "--json"], { cwd: unreadable }), "AL_ERR_CLI_CONFIG", 1);
    expect(notJson.message).toContain(join(unreadable, "assembly-line.config.json"));
  });

  it("start and dev: the address once listening; a bad port as a usage error", async () => {
    const out: string[] = [];
    const io = { out: (line: string) => void out.push(line), err: () => {} };
    const code = await main(["start", join(small, ".assembly-line"), "--port", "0", "--json"], io, { serve: { installSignals: false, onListening: (handle) => void handle.shutdown() } });
    expect(code).toBe(0);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!)).toMatchObject({ ok: true, data: { agentId: "small", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$|^http:\/\/0\.0\.0\.0:\d+$/), devMode: false, model: "scripted:unused", modelNote: "model scripted:unused" } });
    errorEnvelope(await cli(["dev", small, "--port", "99999", "--json"]), "AL_ERR_CLI_USAGE", 2);
  });

  it("deploy", async () => {
    // A release bundles the host package: the agent's project resolves it (here, this checkout's).
    const project = join(work, "deployed");
    cpSync(small, join(project, "agent"), { recursive: true, filter: (source) => !source.includes(".assembly-line") });
    symlinkSync(join(root, "node_modules"), join(project, "node_modules"));
    const out = join(work, "fly-release");
    const outcome = okEnvelope(await cli(["deploy", join(project, "agent"), "--target", "fly", "--out", out, "--json"]));
    expect(outcome).toMatchObject({ target: "fly", envNames: expect.any(Array) });
    errorEnvelope(await cli(["deploy", small, "--json"]), "AL_ERR_CLI_USAGE", 2);
  }, 120_000);
});

describe("project config", () => {
  it("gives the agent folder, state dir and model, so `run -m` works inside the project; flags win; config show says where each came from", async () => {
    const project = join(work, "configured");
    cpSync(small, join(project, "agent"), { recursive: true, filter: (source) => !source.includes(".assembly-line") });
    write(project, { "assembly-line.config.json": JSON.stringify({ agent: "./agent", stateDir: "./runs-state", model: "scripted:agent/hello.json", host: { port: 4321 } }) });

    const ran = await spawnCli(["run", "-m", "hi", "--json"], { cwd: project });
    expect(JSON.parse(ran.stdout).data.result).toMatchObject({ status: "completed", response: { text: "hello" } });
    // From a folder below the config's, the scripted model's file is still the config's.
    mkdirSync(join(project, "notes"), { recursive: true });
    const below = await spawnCli(["run", "-m", "hi", "--json"], { cwd: join(project, "notes") });
    expect(JSON.parse(below.stdout).data.result).toMatchObject({ status: "completed", response: { text: "hello" } });
    const listed = await spawnCli(["runs", "list", "--json"], { cwd: project });
    expect(JSON.parse(listed.stdout).data.runs).toHaveLength(2);
    // The flag wins over the config: another state folder has no runs.
    mkdirSync(join(work, "other-state"), { recursive: true });
    const elsewhere = await spawnCli(["runs", "list", "--state-dir", join(work, "other-state"), "--json"], { cwd: project });
    expect(JSON.parse(elsewhere.stdout).data.runs).toHaveLength(0);

    const shown = JSON.parse((await spawnCli(["config", "show", "--api", "openai-completions", "--json"], { cwd: project })).stdout).data;
    const file = join(project, "assembly-line.config.json");
    expect(shown.configFile).toBe(file);
    expect(shown.settings).toEqual({
      agent: { value: join(project, "agent"), source: { config: file } },
      stateDir: { value: join(project, "runs-state"), source: { config: file } },
      model: { value: `scripted:${join(project, "agent/hello.json")}`, source: { config: file } },
      baseUrl: { source: "default" },
      api: { value: "openai-completions", source: "flag" },
      "host.port": { value: 4321, source: { config: file } },
      "host.host": { value: expect.any(String), source: "default" },
    });
    // The config's model server goes with the config's model: a scripted --model runs without it.
    write(project, { "assembly-line.config.json": JSON.stringify({ agent: "./agent", stateDir: "./runs-state", model: "local/llama3", baseUrl: "http://127.0.0.1:9/v1", host: { port: 4321 } }) });
    const scripted = await spawnCli(["run", "-m", "hi", "--model", "scripted:agent/hello.json", "--json"], { cwd: project });
    expect(JSON.parse(scripted.stdout).data.result.status).toBe("completed");
    // config show says so: with --model, the config's baseUrl is not the one a command uses.
    const withModel = JSON.parse((await spawnCli(["config", "show", "--model", "scripted:agent/hello.json", "--json"], { cwd: project })).stdout).data;
    expect(withModel.settings.baseUrl).toEqual({ source: "default" });
    const withoutModel = JSON.parse((await spawnCli(["config", "show", "--json"], { cwd: project })).stdout).data;
    expect(withoutModel.settings.baseUrl).toEqual({ value: "http://127.0.0.1:9/v1", source: { config: file } });
    const text = await spawnCli(["config", "show", "--api", "openai-completions"], { cwd: project });
    expect(text.stdout).toMatch(new RegExp(`stateDir\\s+${join(project, "runs-state")}\\s+from ${file}`));
    expect(text.stdout).toMatch(/api\s+openai-completions\s+from --api/);
  });

  it("reads assembly-line.config.ts through jiti and the package.json key", async () => {
    const tsProject = write(join(work, "ts-config"), {
      "assembly-line.config.ts": `import type { ProjectConfig } from "@assemblyline-agents/node";\nconst model: string = "openai/gpt-5.4-mini";\nexport default { model, host: { host: "0.0.0.0" } } satisfies ProjectConfig;\n`,
    });
    const fromTs = JSON.parse((await spawnCli(["config", "show", "--json"], { cwd: join(tsProject) })).stdout).data;
    expect(fromTs.settings.model).toEqual({ value: "openai/gpt-5.4-mini", source: { config: join(tsProject, "assembly-line.config.ts") } });
    expect(fromTs.settings["host.host"]).toEqual({ value: "0.0.0.0", source: { config: join(tsProject, "assembly-line.config.ts") } });

    const pkgProject = write(join(work, "pkg-config"), { "package.json": JSON.stringify({ name: "x", "assembly-line": { baseUrl: "http://127.0.0.1:11434/v1" } }), "sub/.keep": "" });
    // Found from a folder below the project root.
    const fromPkg = JSON.parse((await spawnCli(["config", "show", "--json"], { cwd: join(pkgProject, "sub") })).stdout).data;
    expect(fromPkg.settings.baseUrl).toEqual({ value: "http://127.0.0.1:11434/v1", source: { config: join(pkgProject, "package.json") } });
  });
});

describe("colours, progress and start-up", () => {
  it("colours only a terminal, and never with NO_COLOR", () => {
    expect(takesColor({ isTTY: true }, {})).toBe(true);
    expect(takesColor({ isTTY: false }, {})).toBe(false);
    expect(takesColor({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(takesColor({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(true);
    expect(takesColor({ isTTY: true }, { NO_COLOR: "1", FORCE_COLOR: "1" })).toBe(false);
    expect(takesColor({ isTTY: true }, { TERM: "dumb" })).toBe(false);
  });

  it("paints errors and help when the stream takes colour, and prints plain text otherwise", async () => {
    const ansi = /\u001b\[\d+m/;
    expect((await cli(["rnu"], { color: true })).stderr).toMatch(ansi);
    expect((await cli(["rnu"])).stderr).not.toMatch(ansi);
    expect((await cli(["--help"], { color: true })).stdout).toMatch(ansi);
    expect((await cli(["--help"])).stdout).not.toMatch(ansi);
    const piped = await spawnCli(["rnu"], { env: { NO_COLOR: "1", FORCE_COLOR: "" } });
    expect(piped.stderr).not.toMatch(ansi);
    const forced = await spawnCli(["rnu"], { env: { FORCE_COLOR: "1", NO_COLOR: "" } });
    expect(forced.stderr).toMatch(ansi);
  });

  it("shows progress of long work on a terminal's stderr only, and never with --json", async () => {
    expect((await cli(["build", small], { tty: true })).stderr).toContain(`› building ${small}`);
    expect((await cli(["build", small])).stderr).toBe("");
    const json = await cli(["build", small, "--json"], { tty: true });
    expect(json.stderr).toBe("");
  });

  it("loads no command module, kernel runtime, registry or model stack for --help and --version, no kernel runtime or address library for runs list, no registry or catalog for a scripted run", () => {
    const hooks = `export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write("RESOLVED " + r.url + "\\n"); return r; }`;
    const trace = (args: string[], cwd = root) => {
      const source = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)}); process.argv = [process.argv[0], ${JSON.stringify(bin)}, ...${JSON.stringify(args)}]; await import(${JSON.stringify(bin)});`;
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", source], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
      return child.stderr.split("\n").filter((line) => line.startsWith("RESOLVED ")).map((line) => line.slice("RESOLVED ".length));
    };
    const heavy = /\/(kernel\/dist|registry\/dist|plugins\/(pi|local|codex|connections)\/|dist\/cli\/commands\/|@mariozechner\/|typebox\/)/;
    for (const args of [["--help"], ["--version"], ["runs", "--help"]]) {
      const modules = trace(args);
      expect(modules.some((url) => url.endsWith("/dist/cli/program.js"))).toBe(true);
      expect(modules.filter((url) => heavy.test(url)), args.join(" ")).toEqual([]);
    }
    const listing = trace(["runs", "list", "--agent", notes]);
    expect(listing.some((url) => url.endsWith("/dist/cli/commands/runs.js"))).toBe(true);
    // ipaddr.js (CommonJS, for outbound address checks) cost a listing some 40 ms to import: the SDK loads it when it first checks an address.
    expect(listing.filter((url) => /\/(kernel\/dist|registry\/dist|plugins\/pi\/|@mariozechner\/|ipaddr\.js\/)/.test(url))).toEqual([]);
    // A run given a scripted model, of an agent (on openai/gpt-5.4-mini) without gateway.ts: neither the registry nor the model catalog.
    const run = trace(["run", notes, "-m", "hi", "--model", notesScript]);
    expect(run.some((url) => url.includes("/kernel/dist/"))).toBe(true);
    expect(run.filter((url) => /\/(registry\/dist|plugins\/pi\/|@mariozechner\/|typebox\/)/.test(url))).toEqual([]);
  });
});
