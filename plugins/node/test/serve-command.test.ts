import { spawn, type ChildProcess } from "node:child_process";
import { cpSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { buildAgent } from "@assemblyline-agents/runtime";
import { devCommand } from "../src/cli/commands/serve.js";
import { call, tempDir } from "./support/host.js";

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");
const runner = resolve(import.meta.dirname, "fixtures/serve-child.mjs");
const bin = resolve(import.meta.dirname, "../bin/assembly-line.js");
const failingStateClose = resolve(import.meta.dirname, "fixtures/failing-state-close.mjs");

// A failed assertion must not leave a server process behind.
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
});

/** `entry` is what node runs before `args`: the embedding runner, or the command line itself (its bin, with preloads). */
function serve(
  args: string[],
  env: Record<string, string> = {},
  entry: string[] = [runner],
): Promise<{ child: ChildProcess; url: string; stdout: () => string; stderr: () => string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [...entry, ...args], { env: { ...process.env, OPENAI_API_KEY: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return new Promise((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`no listening line:\n${stdout}\n${stderr}`)), 30_000);
    child.stdout!.on("data", (chunk) => {
      stdout += chunk;
      const match = /listening on (\S+)/.exec(stdout);
      // The route list ends with the probes line.
      if (match && stdout.includes("/readyz")) {
        clearTimeout(timer);
        ready({ child, url: match[1]!, stdout: () => stdout, stderr: () => stderr, exited });
      }
    });
    child.on("exit", () => fail(new Error(`exited early:\n${stdout}\n${stderr}`)));
  });
}

function copyExample(): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-serve-"), "notes-agent");
  cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
  return { agentDir, script: join(agentDir, "conversations/remember-milk.json") };
}

describe("assembly-line dev", () => {
  it("serves the notes example: a message pauses for approval, the approve endpoint resumes it, and the reply comes back", async () => {
    const { agentDir, script } = copyExample();
    const dev = await serve(["dev", agentDir, "--port", "0", "--offline-script", script]);
    expect(dev.stdout()).toMatch(/POST\s+http:\/\/127\.0\.0\.1:\d+\/message\s+\(channel message\)/);
    expect(dev.stdout()).toMatch(/run inspector: http:\/\/127\.0\.0\.1:\d+\/inspector\n/);
    expect(dev.stdout()).toMatch(/scripted conversation .*remember-milk\.json \(.*OPENAI_API_KEY is not set.*\) \(dev mode\)/);

    const sent = await call(`${dev.url}/message?wait=30`, { body: { message: "Remember to buy milk", conversationId: "demo" } });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status: "waiting_approval", pendingApprovals: [{ toolName: "record_note", input: { note: "Buy milk on the way home" } }] });
    const waiting = await call(`${dev.url}/runs?status=waiting_approval`);
    expect(waiting.body.runs.map((run: { id: string }) => run.id)).toEqual([sent.body.runId]);
    const approved = await call(`${dev.url}/runs/${sent.body.runId}/approve`, { method: "POST" });
    expect(approved.body).toMatchObject({ status: "completed", response: { text: 'Noted: "Buy milk on the way home". It\'s the only note about milk.' } });

    dev.child.kill("SIGTERM");
    expect(await dev.exited).toBe(0);
    // Readable dev logs, not JSON.
    expect(dev.stderr()).toMatch(/^\d\d:\d\d:\d\d INFO  turn accepted \[ingress\.accepted\]/m);
    expect(dev.stderr()).toMatch(/graceful shutdown completed/);
  }, 60_000);

  it("exits 1 when a step of its shutdown fails (the state store cannot close)", async () => {
    const { agentDir, script } = copyExample();
    const dev = await serve(["dev", agentDir, "--port", "0", "--offline-script", script], {}, ["--import", failingStateClose, bin]);
    dev.child.kill("SIGTERM");
    expect(await dev.exited, dev.stderr()).toBe(1);
    expect(dev.stderr()).toMatch(/shutdown: state\.close failed; continuing/);
    expect(dev.stderr()).toMatch(/graceful shutdown completed, but state\.close failed/);
  }, 60_000);

  it("returns 1 from the command when a step of its shutdown fails, and 0 when none does", async () => {
    const { agentDir, script } = copyExample();
    const io = { out: () => undefined, err: () => undefined };
    const failing = await devCommand([agentDir, "--port", "0", "--offline-script", script], io, {
      installSignals: false,
      onListening: (handle) => {
        // It releases the folder (the clean run below opens it again), then reports a failure.
        const close = handle.runtime.state.close!.bind(handle.runtime.state);
        handle.runtime.state.close = async () => {
          await close();
          throw new Error("the state store could not flush its last writes");
        };
        void handle.shutdown().catch(() => undefined);
      },
    });
    expect(failing).toBe(1);
    const clean = await devCommand([agentDir, "--port", "0", "--offline-script", script], io, { installSignals: false, onListening: (handle) => void handle.shutdown() });
    expect(clean).toBe(0);
  }, 60_000);

  it("refuses a bad --port before listening", async () => {
    const error = await devCommand([example, "--port", "http"], { out: () => undefined, err: () => undefined }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_CLI_USAGE")).toBe(true);
  });
});

describe("assembly-line start", () => {
  it("boots a built artifact in production: raw routes need the bearer token, logs are JSON at ASSEMBLY_LINE_LOG_LEVEL", async () => {
    const { agentDir, script } = copyExample();
    const { artifactRoot } = await buildAgent(agentDir);
    const start = await serve(["start", artifactRoot, "--port", "0", "--model", `scripted:${script}`], { ASSEMBLY_LINE_BEARER_TOKEN: "prod-token", ASSEMBLY_LINE_LOG_LEVEL: "warn" });
    expect((await call(`${start.url}/message`, { body: { message: "Remember to buy milk" } })).status).toBe(401);
    const auth = { authorization: "Bearer prod-token" };
    const sent = await call(`${start.url}/message?wait=30`, { body: { message: "Remember to buy milk" }, headers: auth });
    expect(sent.body.status).toBe("waiting_approval");
    const approved = await call(`${start.url}/runs/${sent.body.runId}/approve`, { body: {}, headers: auth });
    expect(approved.body.status).toBe("completed");
    start.child.kill("SIGTERM");
    expect(await start.exited).toBe(0);
    const lines = start.stderr().trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as { level: string; time: string; msg: string; event?: string });
    expect(lines.length).toBeGreaterThan(0);
    expect(new Set(lines.map((line) => line.level))).toEqual(new Set(["warn"]));
    expect(lines.find((line) => line.event === "security.unauthorized")).toMatchObject({ msg: expect.any(String), time: expect.any(String) });
  }, 60_000);
});
