import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startOpenAIChatServer, type ScriptedModelServer } from "@assemblyline-agents/pi/testkit";
import { main } from "../src/cli/main.js";
import { devCommand, startCommand } from "../src/cli/commands/serve.js";
import type { CommandIO } from "../src/cli/io.js";
import { tempDir } from "./support/host.js";

// The command line refuses what it cannot do, before it builds, creates a run or listens,
// with AL_ERR_CLI_USAGE (exit 2) naming the flag, and never as a bug report with a stack.

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");

function notesAgent(): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-cli-checks-"), "notes-agent");
  cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
  return { agentDir, script: join(agentDir, "conversations/remember-milk.json") };
}

/** A small agent on a model of our choosing, with one automation. */
function smallAgent(model: string): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-cli-checks-small-"), "agent");
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "small", model: ${JSON.stringify(model)} });\n`,
    "automations/tick.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 60000 }, message: "tick" });\n`,
    "hello.json": JSON.stringify({ turns: [{ text: "hello" }] }),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  return { agentDir, script: join(agentDir, "hello.json") };
}

interface Ran {
  code: number;
  out: string;
  err: string;
}

async function cli(args: string[]): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CommandIO = { out: (line) => void out.push(line), err: (line) => void err.push(line) };
  const code = await main(args, io);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** A usage error that names what was wrong: exit 2, AL_ERR_CLI_USAGE, no stack trace. */
function expectUsageError(ran: Ran, ...named: Array<string | RegExp>): void {
  expect(ran.code, `${ran.out}\n${ran.err}`).toBe(2);
  expect(ran.err).toContain("AL_ERR_CLI_USAGE");
  expect(ran.err).not.toContain("AL_ERR_CLI_UNEXPECTED");
  expect(ran.err).not.toMatch(/^\s+at /m);
  for (const part of named) expect(ran.err).toMatch(part);
}

async function runIds(agentDir: string, stateDir: string): Promise<Array<{ id: string; status: string; modelSpec: string }>> {
  const listed = await cli(["runs", "list", "--agent", agentDir, "--state-dir", stateDir, "--json"]);
  expect(listed.code, listed.err).toBe(0);
  return JSON.parse(listed.out).data.runs;
}

/** Run `body` with `dir` as the working folder, where the CLI reads the project config and relative paths. */
async function inFolder(dir: string, body: () => Promise<void>): Promise<void> {
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    await body();
  } finally {
    process.chdir(cwd);
  }
}

/** A run of the notes example paused for approval of record_note, on the scripted model. */
async function pausedRun(): Promise<{ agentDir: string; script: string; stateDir: string; runId: string }> {
  const { agentDir, script } = notesAgent();
  const stateDir = join(agentDir, "state");
  const paused = await cli(["run", agentDir, "-m", "Remember to buy milk", "--model", `scripted:${script}`, "--state-dir", stateDir, "--json"]);
  expect(paused.code, paused.err).toBe(3);
  return { agentDir, script, stateDir, runId: JSON.parse(paused.out).data.result.runId };
}

describe("--model, --base-url and --api on commands that continue a run", () => {
  it("refuses a --model other than the run's own on approve, deny, answer and resume, and leaves the run as it was", async () => {
    const { agentDir, stateDir, runId } = await pausedRun();
    for (const command of [["approve", runId], ["deny", runId], ["answer", runId, "Tuesday"], ["resume", runId]]) {
      const refused = await cli([...command, "--agent", agentDir, "--state-dir", stateDir, "--model", "anthropic/claude-haiku-4-5"]);
      expectUsageError(refused, "--model anthropic/claude-haiku-4-5", /continues on its own model scripted:.*remember-milk\.json/);
    }
    expect(await runIds(agentDir, stateDir)).toMatchObject([{ id: runId, status: "waiting_approval" }]);
  }, 60_000);

  it("takes a --model that names the run's own model, and continues the run on it", async () => {
    const { agentDir, script, stateDir, runId } = await pausedRun();
    const approved = await cli(["approve", runId, "--agent", agentDir, "--state-dir", stateDir, "--model", `scripted:${script}`]);
    expect(approved.code, approved.err).toBe(0);
    expect(approved.out).toContain("It's the only note about milk.");
  }, 60_000);

  it("takes agent.ts's relative scripted model as --model on approve, as the run stored it", async () => {
    const { agentDir } = notesAgent();
    const agentFile = join(agentDir, "agent.ts");
    writeFileSync(agentFile, readFileSync(agentFile, "utf8").replace('"openai/gpt-5.4-mini"', '"scripted:conversations/remember-milk.json"'));
    // A relative scripted spec is read from the working folder, by the run and by the check alike.
    await inFolder(agentDir, async () => {
      const paused = await cli(["run", ".", "-m", "Remember to buy milk", "--state-dir", "state", "--json"]);
      expect(paused.code, paused.err).toBe(3);
      const runId = JSON.parse(paused.out).data.result.runId as string;
      const approved = await cli(["approve", runId, "--agent", ".", "--state-dir", "state", "--model", "scripted:conversations/remember-milk.json"]);
      expect(approved.code, approved.err).toBe(0);
    });
  }, 60_000);

  it("refuses --base-url for a run on a scripted model, and --api without --base-url", async () => {
    const { agentDir, stateDir, runId } = await pausedRun();
    expectUsageError(await cli(["approve", runId, "--agent", agentDir, "--state-dir", stateDir, "--base-url", "http://127.0.0.1:9/v1"]), "--base-url http://127.0.0.1:9/v1", /scripted model/);
    expectUsageError(await cli(["approve", runId, "--agent", agentDir, "--state-dir", stateDir, "--api", "openai-completions"]), "--api openai-completions", /no --base-url/);
    expect(await runIds(agentDir, stateDir)).toMatchObject([{ id: runId, status: "waiting_approval" }]);
  }, 60_000);

  describe("against an OpenAI-compatible server", () => {
    let server: ScriptedModelServer & { baseUrl: string };
    const key = process.env.OPENAI_API_KEY;
    // Each test's notes run: record_note (paused for approval), then the reply once it is approved.
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

    it("serves the run's own model from --base-url when approve continues it, without --model", async () => {
      const { agentDir } = notesAgent();
      const stateDir = join(agentDir, "state");
      const paused = await cli(["run", agentDir, "-m", "Remember to buy milk", "--model", "openai/gpt-4o-mini", "--base-url", server.baseUrl, "--api", "openai-completions", "--state-dir", stateDir, "--json"]);
      expect(paused.code, paused.err + paused.out).toBe(3);
      const runId = JSON.parse(paused.out).data.result.runId as string;

      const approved = await cli(["approve", runId, "--agent", agentDir, "--state-dir", stateDir, "--base-url", server.baseUrl, "--api", "openai-completions", "--json"]);
      expect(approved.code, approved.err + approved.out).toBe(0);
      expect(JSON.parse(approved.out).data.result).toMatchObject({ status: "completed", response: { text: "Noted." } });
      // Both model calls went to the server --base-url named.
      expect(server.requests).toHaveLength(2);
    }, 60_000);

    it("serves agent.ts's model from the config's baseUrl when the config names no model: run, approve and automations run reach the server", async () => {
      const { agentDir } = notesAgent();
      mkdirSync(join(agentDir, "automations"));
      writeFileSync(join(agentDir, "automations/milk.ts"), `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 3600000 }, message: "Remember to buy milk" });\n`);
      writeFileSync(join(agentDir, "assembly-line.config.json"), JSON.stringify({ baseUrl: server.baseUrl, api: "openai-completions" }));
      await inFolder(agentDir, async () => {
        const paused = await cli(["run", ".", "-m", "Remember to buy milk", "--state-dir", "state"]);
        expect(paused.err).not.toContain("AL_ERR_CLI_USAGE");
        expect(paused.code, paused.err + paused.out).toBe(3);
        expect(paused.out).toContain(`model openai/gpt-5.4-mini at ${server.baseUrl}`);
        const runId = /run (run_\S+) waits for approval/.exec(paused.out)![1]!;
        const approved = await cli(["approve", runId, "--agent", ".", "--state-dir", "state", "--json"]);
        expect(approved.code, approved.err + approved.out).toBe(0);
        expect(server.requests).toHaveLength(2);
        server.toolCalls([{ id: "call_note_2", name: "record_note", argumentChunks: ['{"note": "Buy milk"}'] }]);
        const automation = await cli(["automations", "run", "milk", "--state-dir", "state"]);
        expect(automation.code, automation.err + automation.out).toBe(3);
        expect(server.requests).toHaveLength(3);
      });
    }, 60_000);

    it("serves agent.ts's model from the config's baseUrl on dev and start", async () => {
      const { agentDir } = notesAgent();
      writeFileSync(join(agentDir, "assembly-line.config.json"), JSON.stringify({ baseUrl: server.baseUrl, api: "openai-completions" }));
      await inFolder(agentDir, async () => {
        for (const [serve, args] of [[devCommand, ["."]], [startCommand, [".assembly-line"]]] as const) {
          const printed: string[] = [];
          const code = await serve([...args, "--port", "0", "--json"], { out: (line) => void printed.push(line), err: () => undefined }, { installSignals: false, onListening: (handle) => void handle.shutdown() });
          expect(code, printed.join("\n")).toBe(0);
          expect(JSON.parse(printed[0]!).data.modelNote).toBe(`model openai/gpt-5.4-mini at ${server.baseUrl}`);
        }
      });
    }, 60_000);

    it("keeps the config's server for a run on the config's model when approve repeats that model as --model", async () => {
      const { agentDir } = notesAgent();
      writeFileSync(join(agentDir, "assembly-line.config.json"), JSON.stringify({ model: "openai/gpt-4o-mini", baseUrl: server.baseUrl, api: "openai-completions" }));
      await inFolder(agentDir, async () => {
        const paused = await cli(["run", ".", "-m", "Remember to buy milk", "--state-dir", "state", "--json"]);
        expect(paused.code, paused.err + paused.out).toBe(3);
        const runId = JSON.parse(paused.out).data.result.runId as string;
        const approved = await cli(["approve", runId, "--agent", ".", "--state-dir", "state", "--model", "openai/gpt-4o-mini", "--json"]);
        expect(approved.code, approved.err + approved.out).toBe(0);
        expect(JSON.parse(approved.out).data.result).toMatchObject({ status: "completed", response: { text: "Noted." } });
        expect(server.requests).toHaveLength(2);
      });
    }, 60_000);
  });

  it("is not taken by commands that never call a model", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    for (const command of [["runs", "list"], ["runs", "show", "run_x"], ["runs", "migrate", "run_x", "--to", "current"], ["automations", "list"], ["automations", "pause", "tick"], ["automations", "resume", "tick"]]) {
      expectUsageError(await cli([...command, "--agent", agentDir, "--model", "openai/gpt-5.4-mini"]), "unknown option '--model'");
      expectUsageError(await cli([...command, "--agent", agentDir, "--base-url", "http://127.0.0.1:9/v1"]), "unknown option '--base-url'");
    }
  });

  it("refuses --api without --base-url on run, instead of ignoring it", async () => {
    const { agentDir, script } = smallAgent("scripted:unused");
    expectUsageError(await cli(["run", agentDir, "-m", "hi", "--model", `scripted:${script}`, "--api", "openai-completions"]), "--api openai-completions");
  });
});

describe("--state-dir", () => {
  it("names --state-dir when it points at a file, on every command that opens state, without a stack trace", async () => {
    const { agentDir, script } = smallAgent("scripted:unused");
    expect((await cli(["build", agentDir])).code).toBe(0);
    const file = join(tempDir("al-cli-checks-file-"), "not-a-folder");
    writeFileSync(file, "keep me\n");
    for (const command of [
      ["runs", "list", "--agent", agentDir],
      ["runs", "show", "run_x", "--agent", agentDir],
      ["approve", "run_x", "--agent", agentDir],
      ["automations", "list", "--agent", agentDir],
      ["skills", "list", "--agent", agentDir],
      ["run", agentDir, "-m", "hi", "--model", `scripted:${script}`],
    ]) {
      expectUsageError(await cli([...command, "--state-dir", file]), `--state-dir ${file} is a file, not a folder`);
    }
    const error = await devCommand([agentDir, "--port", "0", "--state-dir", file, "--model", `scripted:${script}`], { out: () => undefined, err: () => undefined }).catch((caught: unknown) => caught);
    expect(String(error)).toMatch(/AL_ERR_CLI_USAGE: --state-dir .* is a file, not a folder/);
  }, 60_000);

  it("is refused, and not created, when a command on kept runs is given one that does not exist", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    expect((await cli(["build", agentDir])).code).toBe(0);
    const missing = join(tempDir("al-cli-checks-typo-"), "stat-dir");
    for (const command of [["runs", "list"], ["runs", "show", "run_x"], ["approve", "run_x"], ["skills", "list"]]) {
      expectUsageError(await cli([...command, "--agent", agentDir, "--state-dir", missing]), `--state-dir ${missing} does not exist`);
      expect(existsSync(missing)).toBe(false);
    }
  }, 60_000);

  it("lists no runs for a fresh agent in its default folder, as before", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    expect((await cli(["build", agentDir])).code).toBe(0);
    const listed = await cli(["runs", "list", "--agent", agentDir]);
    expect(listed).toMatchObject({ code: 0, out: "no runs" });
  }, 60_000);
});

describe("model specs are checked before a run is created or a server listens", () => {
  it("refuses an unknown --model on run without leaving a run behind", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    const stateDir = join(agentDir, "state");
    mkdirSync(stateDir);
    const ran = await cli(["run", agentDir, "-m", "hi", "--model", "nonsense/zzz", "--state-dir", stateDir]);
    expect(ran.code).toBe(1);
    expect(ran.err).toMatch(/AL_ERR_MODEL_UNKNOWN: Model "nonsense\/zzz"/);
    // Not even a state store: the check comes before the build and the run.
    expect(readdirSync(stateDir)).toEqual([]);
  }, 60_000);

  it("refuses a scripted --model whose file is missing, and an --offline-script that is, without leaving a run behind", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    const stateDir = join(agentDir, "state");
    mkdirSync(stateDir);
    const scripted = await cli(["run", agentDir, "-m", "hi", "--model", `scripted:${join(agentDir, "conversations/missing.json")}`, "--state-dir", stateDir]);
    expect(scripted.code).toBe(1);
    expect(scripted.err).toMatch(/AL_ERR_SCRIPTED_MODEL: cannot read the model script .*missing\.json/);
    const offline = await cli(["run", agentDir, "-m", "hi", "--offline-script", join(agentDir, "missing.json"), "--state-dir", stateDir]);
    expect(offline.code).toBe(1);
    expect(offline.err).toMatch(/AL_ERR_SCRIPTED_MODEL: --offline-script .*missing\.json/);
    expect(readdirSync(stateDir)).toEqual([]);
  }, 60_000);

  it("refuses --offline-script beside --model, which would never read it, without leaving a run behind", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    const stateDir = join(agentDir, "state");
    mkdirSync(stateDir);
    writeFileSync(join(agentDir, "hello.json"), JSON.stringify({ turns: [{ text: "hello" }] }));
    const both = await cli(["run", agentDir, "-m", "hi", "--model", "openai/gpt-5.4-mini", "--offline-script", join(agentDir, "hello.json"), "--state-dir", stateDir]);
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/AL_ERR_CLI_USAGE: --offline-script is the fallback for agent\.ts's model, but --model chooses the model/);
    expect(readdirSync(stateDir)).toEqual([]);
  }, 60_000);

  it("refuses an unknown --model on automations run without starting a run", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    expect((await cli(["build", agentDir])).code).toBe(0);
    const stateDir = join(agentDir, "state");
    mkdirSync(stateDir);
    const ran = await cli(["automations", "run", "tick", "--agent", agentDir, "--state-dir", stateDir, "--model", "nonsense/zzz"]);
    expect(ran.code).toBe(1);
    expect(ran.err).toContain("AL_ERR_MODEL_UNKNOWN");
    expect(await runIds(agentDir, stateDir)).toEqual([]);
  }, 60_000);

  it("dev refuses an unknown --model, and an unknown model in agent.ts, before it listens", async () => {
    const quiet = { out: () => undefined, err: () => undefined };
    let listened = false;
    const control = { installSignals: false, onListening: (handle: { shutdown(): Promise<void> }) => ((listened = true), void handle.shutdown()) };
    const { agentDir } = smallAgent("scripted:unused");
    const flagged = await devCommand([agentDir, "--port", "0", "--model", "nonsense/zzz"], quiet, control).catch((caught: unknown) => caught);
    expect(String(flagged)).toContain('AL_ERR_MODEL_UNKNOWN: Model "nonsense/zzz"');
    const unknown = smallAgent("nonsense/zzz");
    const authored = await devCommand([unknown.agentDir, "--port", "0"], quiet, control).catch((caught: unknown) => caught);
    expect(String(authored)).toContain('AL_ERR_MODEL_UNKNOWN: Model "nonsense/zzz"');
    expect(listened).toBe(false);
  }, 60_000);
});

describe("empty and malformed values", () => {
  it("refuses an empty --port on dev instead of listening on a random port", async () => {
    const { agentDir, script } = smallAgent("scripted:unused");
    let listened = false;
    const error = await devCommand([agentDir, "--port", "", "--model", `scripted:${script}`], { out: () => undefined, err: () => undefined }, { installSignals: false, onListening: (handle) => ((listened = true), void handle.shutdown()) }).catch(
      (caught: unknown) => caught,
    );
    expect(String(error)).toContain("AL_ERR_CLI_USAGE: --port is empty");
    expect(listened).toBe(false);
  });

  it("checks config show --port as dev does", async () => {
    expectUsageError(await cli(["config", "show", "--port", "abc"]), "--port abc is not a port number");
    expectUsageError(await cli(["config", "show", "--port", ""]), "--port is empty");
    expect((await cli(["config", "show", "--port", "8080", "--json"])).code).toBe(0);
  });

  it("refuses an empty message on run without creating a run", async () => {
    const { agentDir, script } = smallAgent("scripted:unused");
    const stateDir = join(agentDir, "state");
    mkdirSync(stateDir);
    expectUsageError(await cli(["run", agentDir, "-m", "", "--model", `scripted:${script}`, "--state-dir", stateDir]), "--message is empty");
    expectUsageError(await cli(["run", agentDir, "-m", "   ", "--model", `scripted:${script}`, "--state-dir", stateDir]), "--message is empty");
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it("refuses an empty or blank --conversation on run rather than starting a new conversation without the history asked for", async () => {
    const { agentDir, script } = smallAgent("scripted:unused");
    const stateDir = join(agentDir, "state");
    mkdirSync(stateDir);
    // as `assembly-line run -m "and the eggs?" --conversation "$CONV"` with CONV unset
    expectUsageError(await cli(["run", agentDir, "-m", "and the eggs?", "--model", `scripted:${script}`, "--state-dir", stateDir, "--conversation", ""]), "--conversation is empty");
    expectUsageError(await cli(["run", agentDir, "-m", "and the eggs?", "--model", `scripted:${script}`, "--state-dir", stateDir, "--conversation", "  "]), "--conversation is empty");
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it("refuses an empty callId on approve and deny rather than deciding whatever call is pending", async () => {
    const { agentDir, stateDir, runId } = await pausedRun();
    expectUsageError(await cli(["approve", runId, "", "--agent", agentDir, "--state-dir", stateDir]), "<callId> is empty");
    expectUsageError(await cli(["deny", runId, " ", "--agent", agentDir, "--state-dir", stateDir]), "<callId> is empty");
    expect(await runIds(agentDir, stateDir)).toMatchObject([{ id: runId, status: "waiting_approval" }]);
  }, 60_000);

  it("refuses answer --call \"\" rather than answering without the guard --call asks for", async () => {
    const { agentDir } = notesAgent();
    const stateDir = join(agentDir, "state");
    const script = join(agentDir, "ask.json");
    writeFileSync(script, JSON.stringify({ turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which shop?" } }] }, { text: "Got it." }] }));
    const asked = await cli(["run", agentDir, "-m", "buy milk", "--model", `scripted:${script}`, "--state-dir", stateDir, "--json"]);
    expect(asked.code, asked.err).toBe(3);
    const runId = JSON.parse(asked.out).data.result.runId as string;
    // as `assembly-line answer "$RUN" "the corner shop" --call "$CALL"` with CALL unset
    expectUsageError(await cli(["answer", runId, "the corner shop", "--call", "", "--agent", agentDir, "--state-dir", stateDir]), "--call is empty");
    expect(await runIds(agentDir, stateDir)).toMatchObject([{ id: runId, status: "waiting_input" }]);
  }, 60_000);

  describe("a --headers-timeout-ms longer than the request timeout the host would use", () => {
    afterEach(() => void vi.unstubAllEnvs());
    const refusedBeforeListening = async (args: string[]): Promise<string> => {
      const { agentDir, script } = smallAgent("scripted:unused");
      let listened = false;
      const error = await devCommand([agentDir, "--port", "0", "--model", `scripted:${script}`, ...args], { out: () => undefined, err: () => undefined }, {
        installSignals: false,
        onListening: (handle) => ((listened = true), void handle.shutdown()),
      }).catch((caught: unknown) => caught);
      expect(listened).toBe(false);
      return String(error);
    };

    it("is a usage error naming the flag when given alone, against the default request timeout (docs/cli.md)", async () => {
      vi.stubEnv("ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", undefined);
      expect(await refusedBeforeListening(["--headers-timeout-ms", "60000"])).toContain("AL_ERR_CLI_USAGE: --headers-timeout-ms 60000 is longer than the default --request-timeout-ms 30000");
    }, 60_000);

    it("is a usage error naming the flag and the ASSEMBLY_LINE_* variable the other side came from", async () => {
      vi.stubEnv("ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", "20000");
      expect(await refusedBeforeListening(["--headers-timeout-ms", "25000"])).toContain("AL_ERR_CLI_USAGE: --headers-timeout-ms 25000 is longer than ASSEMBLY_LINE_REQUEST_TIMEOUT_MS=20000");
      vi.stubEnv("ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", undefined);
      vi.stubEnv("ASSEMBLY_LINE_HEADERS_TIMEOUT_MS", "8000");
      expect(await refusedBeforeListening(["--request-timeout-ms", "5000"])).toContain("AL_ERR_CLI_USAGE: ASSEMBLY_LINE_HEADERS_TIMEOUT_MS=8000 is longer than --request-timeout-ms 5000");
    }, 60_000);
  });
});

describe("a subcommand's flag given before the subcommand", () => {
  it("`runs --agent ./agent list` names --agent and prints the corrected command, rather than saying runs needs a command it was given", async () => {
    for (const args of [["runs", "--agent", "./agent", "list"], ["skills", "--agent", "./agent", "list"], ["automations", "--state-dir", "./state", "list"]]) {
      const ran = await cli([...args, "--json"]);
      expect(ran.code).toBe(2);
      const { error } = JSON.parse(ran.out) as { error: { code: string; message: string; fix: string } };
      expect(error.code).toBe("AL_ERR_CLI_USAGE");
      expect(error.message, args.join(" ")).not.toMatch(/needs a command/);
      expect(error.message).toContain(`${args[1]} is given before the command of assembly-line ${args[0]}`);
      expect(error.fix).toBe(`Run \`assembly-line ${args[0]} ${args[3]} ${args[1]} ${args[2]} --json\`.`);
    }
    // Without a subcommand at all, the group still says it needs one.
    expectUsageError(await cli(["runs", "--agent", "./agent"]), "assembly-line runs needs a command");
  });
});

describe("--base-url without --model", () => {
  it("is refused naming --base-url when agent.ts's model is scripted, which no server serves; the config's baseUrl is set aside for it", async () => {
    const { agentDir } = smallAgent("scripted:unused");
    writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "small", model: ${JSON.stringify(`scripted:${join(agentDir, "hello.json")}`)} });\n`);
    expectUsageError(await cli(["run", agentDir, "-m", "hi", "--base-url", "http://127.0.0.1:9/v1"]), "--base-url http://127.0.0.1:9/v1 serves the model runs use, but that is the scripted model");
    writeFileSync(join(agentDir, "assembly-line.config.json"), JSON.stringify({ baseUrl: "http://127.0.0.1:9/v1" }));
    await inFolder(agentDir, async () => {
      const ran = await cli(["run", ".", "-m", "hi"]);
      expect(ran.code, ran.err).toBe(0);
      expect(ran.out).toContain("hello");
    });
  }, 60_000);
});

describe("--base-url that is not an http:// or https:// address", () => {
  it("is refused as a usage error before a run is created, with the http:// a host:port left out suggested; the config's baseUrl too", async () => {
    const { agentDir } = notesAgent();
    const stateDir = join(agentDir, "state");
    // `localhost:11434/v1` parses as a URL whose scheme is "localhost:": the usual Ollama slip.
    expectUsageError(
      await cli(["run", agentDir, "-m", "hi", "--model", "local/llama3", "--base-url", "localhost:1/v1", "--state-dir", stateDir]),
      "--base-url localhost:1/v1 is not an http:// or https:// URL",
      "did you mean --base-url http://localhost:1/v1?",
    );
    for (const baseUrl of ["ftp://127.0.0.1/v1", "file:///tmp/v1", "javascript:alert(1)"]) {
      const ran = await cli(["run", agentDir, "-m", "hi", "--model", "local/llama3", "--base-url", baseUrl, "--state-dir", stateDir]);
      expectUsageError(ran, `--base-url ${baseUrl} is not an http:// or https:// URL`);
      expect(ran.err).not.toContain("did you mean");
    }
    const small = smallAgent("local/llama3");
    expectUsageError(await cli(["automations", "run", "tick", "--agent", small.agentDir, "--base-url", "localhost:1/v1", "--state-dir", stateDir]), "--base-url localhost:1/v1 is not an http");
    writeFileSync(join(agentDir, "assembly-line.config.json"), JSON.stringify({ model: "local/llama3", baseUrl: "localhost:1/v1" }));
    await inFolder(agentDir, async () => {
      expectUsageError(await cli(["run", ".", "-m", "hi", "--state-dir", stateDir]), "the config's baseUrl localhost:1/v1 is not an http:// or https:// URL");
    });
    expect(existsSync(stateDir) ? await runIds(agentDir, stateDir) : []).toEqual([]);
  }, 60_000);
});
