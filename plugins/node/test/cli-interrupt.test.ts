import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "./support/host.js";

// docs/cli.md: exit 4 is "the run was left queued or running; resume continues it", and with
// --json stdout holds exactly one JSON document. Ctrl-C (SIGINT, or SIGTERM) while a command
// drives a run stops the command, not the run: it says how to resume it and exits 4.

const bin = resolve(import.meta.dirname, "../bin/assembly-line.js");

/** An agent whose one tool takes 5 s, on a scripted model: a signal lands while the run is running. */
function slowAgent(): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-cli-interrupt-"), "slow");
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "slow", model: "openai/gpt-5.4-mini", defaultTools: ["slow_step"] });\n`,
    "tools/slow_step.ts": `import { defineTool } from "@assemblyline-agents/core";\nexport default defineTool({ description: "sleep", inputSchema: { type: "object", properties: {}, additionalProperties: false }, async execute() { await new Promise((r) => setTimeout(r, 5000)); return { slept: true }; } });\n`,
    "slow.json": JSON.stringify({ turns: [{ toolCalls: [{ name: "slow_step", input: {} }] }, { text: "done" }] }),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  return { agentDir, script: join(agentDir, "slow.json") };
}

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI as a user runs it, sent `signals` once its output (or, with --json, the time passed) says the tool is running. */
function cli(args: string[], options: { signals?: NodeJS.Signals[]; after?: RegExp } = {}): Promise<Ended> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let sent = false;
    const send = () => {
      if (sent || !options.signals) return;
      sent = true;
      options.signals.forEach((signal, index) => setTimeout(() => child.kill(signal), 300 + index * 50));
    };
    const watch = () => options.after?.test(stdout + stderr) && send();
    child.stdout.on("data", (chunk) => ((stdout += chunk), watch()));
    child.stderr.on("data", (chunk) => ((stderr += chunk), watch()));
    // --json prints nothing until the end: signal once the tool is surely running.
    if (options.signals && !options.after) setTimeout(send, 3500);
    child.on("exit", (code) => done({ code, stdout, stderr }));
  });
}

describe("Ctrl-C while a command drives a run", () => {
  it("run: stops the command, not the run, printing the resume line and exiting 4; approve and answer point to that resume, which finishes the run", async () => {
    const { agentDir, script } = slowAgent();
    const stateDir = join(agentDir, "state");
    const ran = await cli(["run", agentDir, "-m", "go", "--model", `scripted:${script}`, "--state-dir", stateDir], { signals: ["SIGINT"], after: /tool\.called/ });
    expect(ran.code, ran.stdout + ran.stderr).toBe(4);
    const resumeLine = /continue it with: npx assembly-line resume (run_\S+) (.*)$/m.exec(ran.stdout);
    expect(resumeLine, ran.stdout).not.toBeNull();
    expect(ran.stdout).toMatch(/run run_\S+ is running/);
    const runId = resumeLine![1]!;
    // approve and answer have nothing to decide on a run left running: they point to resume, as the report did.
    for (const command of [["approve", runId], ["answer", runId, "yes"]]) {
      const refused = await cli([...command, "--agent", agentDir, "--state-dir", stateDir]);
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain("AL_ERR_RUN_NOT_RESUMABLE");
      expect(refused.stderr).toContain(`Continue it with \`assembly-line resume ${runId} --agent ${JSON.stringify(agentDir)} --state-dir ${JSON.stringify(stateDir)}\``);
      expect(refused.stderr).not.toContain("single-use");
    }
    const resumed = await cli(["resume", runId, "--agent", agentDir, "--state-dir", stateDir]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("done");
  }, 60_000);

  it("run --json: prints the one envelope, the run as left (running), and exits 4", async () => {
    const { agentDir, script } = slowAgent();
    const ran = await cli(["run", agentDir, "-m", "go", "--model", `scripted:${script}`, "--state-dir", join(agentDir, "state"), "--json"], { signals: ["SIGTERM"] });
    expect(ran.code, ran.stderr).toBe(4);
    const envelope = JSON.parse(ran.stdout);
    expect(envelope.ok).toBe(true);
    expect(envelope.data.result.status).toBe("running");
    expect(envelope.data.events.some((event: { type: string }) => event.type === "tool.called")).toBe(true);
  }, 60_000);
});
