import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";

const bin = resolve(import.meta.dirname, "../plugins/node/bin/assembly-line.js");
const work = mkdtempSync(join(tmpdir(), "al-dev-restart-"));
const agentDir = join(work, "agent");
cpSync(resolve(import.meta.dirname, "fixtures/zombie-agent"), agentDir, { recursive: true });
mkdirSync(join(agentDir, "channels"));
// A raw route, so the host's default message fallback starts runs.
cpSync(resolve(import.meta.dirname, "../examples/notes-agent/channels/message.ts"), join(agentDir, "channels/message.ts"));
const script = join(agentDir, "script.json");
const ledger = join(work, "ledger.log");
const marker = join(work, "mid-call");
/** Far below the 30 s lease the first host holds: only proof that it is dead explains a takeover this fast. */
const BOUND_MS = 5_000;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** `assembly-line dev` on the fixture agent (file state beside it); resolves once it prints its probes line. */
function dev(name: string, workMs: number): Promise<{ child: ChildProcess; url: string; readyAt: number; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [bin, "dev", agentDir, "--port", "0", "--model", `scripted:${script}`], {
    env: { ...process.env, ZOMBIE_LEDGER: ledger, ZOMBIE_MARKER: marker, REPLICA_NAME: name, ZOMBIE_WORK_MS: String(workMs), OPENAI_API_KEY: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const exited = new Promise((done) => child.once("exit", done));
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`dev ${name} never listened:\n${stdout}\n${stderr}`)), 60_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (\S+)/.exec(stdout);
      if (match && stdout.includes("/readyz")) {
        clearTimeout(timer);
        ready({ child, url: match[1]!, readyAt: Date.now(), exited });
      }
    });
    child.once("exit", () => fail(new Error(`dev ${name} exited early:\n${stdout}\n${stderr}`)));
  });
}

async function runStatus(url: string, runId: string): Promise<string> {
  const response = await fetch(`${url}/runs/${runId}`);
  return ((await response.json()) as { run: { status: string } }).run.status;
}

describe("assembly-line dev restarted at once after a SIGKILL", () => {
  it("finishes the run the killed host had in flight within seconds of being ready, applying its effect once", async () => {
    // The first host hangs in the tool call, holding a 30 s lease.
    const first = await dev("a", 600_000);
    const accepted = await fetch(`${first.url}/message`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ message: "order 42" }) });
    expect(accepted.status).toBe(202);
    const { runId } = (await accepted.json()) as { runId: string };
    const started = Date.now();
    while (!existsSync(marker)) {
      if (Date.now() - started > 30_000) throw new Error("the first host never reached the tool call");
      await new Promise((wait) => setTimeout(wait, 20));
    }
    first.child.kill("SIGKILL");
    await first.exited;

    const second = await dev("b", 0);
    let status = await runStatus(second.url, runId);
    while (status !== "completed" && Date.now() - second.readyAt < 30_000) {
      await new Promise((wait) => setTimeout(wait, 20));
      status = await runStatus(second.url, runId);
    }
    const tookMs = Date.now() - second.readyAt;
    console.log(`dev restart: in-flight run completed ${tookMs} ms after the restarted host was ready (lease 30 000 ms)`);
    expect(status).toBe("completed");
    expect(tookMs).toBeLessThan(BOUND_MS);
    // The killed host never reached its effect; the restarted one applied it once.
    expect(readFileSync(ledger, "utf8").trim().split("\n")).toEqual([expect.stringMatching(/^effect b /)]);
    second.child.kill("SIGTERM");
    await second.exited;
  }, 120_000);
});
