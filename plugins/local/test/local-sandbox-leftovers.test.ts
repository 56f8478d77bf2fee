import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalSandboxAdapter } from "../src/index.js";
import { killIfRunning, stillRunning, waitForLine } from "./support/processes.js";
import { tempFolders } from "./support/state-folders.js";

const host = fileURLToPath(new URL("./fixtures/sandbox-host.mjs", import.meta.url));
const folders = tempFolders("al-sandbox-leftovers-");
const started: number[] = [];
const hosts: ChildProcess[] = [];

afterEach(async () => {
  for (const child of hosts.splice(0)) child.kill("SIGKILL");
  for (const pid of started.splice(0)) killIfRunning(pid);
  await folders.removeAll();
});

/** Start a host that runs `command` in sandbox `key`, and SIGKILL it once the command is recorded. */
async function crashWhileRunning(root: string, key: string, command: string): Promise<void> {
  const child = spawn(process.execPath, [host, root, key, command], { stdio: ["ignore", "pipe", "inherit"] });
  hosts.push(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, "exit");
  while (!output.includes("ready\n")) {
    if (child.exitCode !== null) throw new Error(`the sandbox host exited (${child.exitCode}) before its command started`);
    await once(child.stdout!, "data");
  }
  child.kill("SIGKILL");
  await exited;
}

/** The pid a command wrote to `file` in its workspace. */
async function pidIn(adapter: LocalSandboxAdapter, key: string, file: string): Promise<number> {
  const pid = Number(await waitForLine(join(adapter.folderFor(key), "workspace", file)));
  started.push(pid);
  return pid;
}

/** Starts a process in a session of its own, out of the command's process group, and waits until it has written its pid. */
const ESCAPE = "setsid sh -c 'echo $$ > escaped.tmp && mv escaped.tmp escaped.pid; exec sleep 1000' >/dev/null 2>&1 & while [ ! -e escaped.pid ]; do sleep 0.05; done";

describe("LocalSandbox commands that left their process group", () => {
  it("ends them when the command ends, and at its timeout", async () => {
    const root = await folders.make();
    const adapter = new LocalSandboxAdapter({ root });
    const box = await adapter.acquire("run-1");
    const ended = await box.exec(`${ESCAPE}; echo started`, { timeoutMs: 60_000 });
    expect(ended).toMatchObject({ exitCode: 0, stdout: "started\n", timedOut: false });
    expect(await stillRunning(await pidIn(adapter, "run-1", "escaped.pid"))).toBe(false);
    await box.deleteFile("escaped.pid");
    const timedOut = await box.exec(`${ESCAPE}; echo started; sleep 1000`, { timeoutMs: 3_000 });
    expect(timedOut).toMatchObject({ stdout: "started\n", timedOut: true });
    expect(await stillRunning(await pidIn(adapter, "run-1", "escaped.pid"))).toBe(false);
  });

  it("ends them at release while the command still runs", async () => {
    const root = await folders.make();
    const adapter = new LocalSandboxAdapter({ root });
    const box = await adapter.acquire("run-2");
    const running = box.exec(`${ESCAPE}; sleep 1000`, { timeoutMs: 600_000 });
    const escaped = await pidIn(adapter, "run-2", "escaped.pid");
    await adapter.release("run-2");
    await running;
    expect(await stillRunning(escaped)).toBe(false);
  });
});

describe("LocalSandbox commands a killed host left running", () => {
  it("stops them when the sandbox is acquired again", async () => {
    const root = await folders.make();
    await crashWhileRunning(root, "run-1", "echo $$ > shell.pid; sleep 1000 & echo $! > sleep.pid; wait");
    const adapter = new LocalSandboxAdapter({ root });
    const [shell, sleep] = [await pidIn(adapter, "run-1", "shell.pid"), await pidIn(adapter, "run-1", "sleep.pid")];
    expect(await stillRunning(sleep), "the command should outlive its killed host").toBe(true);
    const box = await adapter.acquire("run-1");
    expect(await stillRunning(shell)).toBe(false);
    expect(await stillRunning(sleep)).toBe(false);
    expect((await box.exec("echo alive")).stdout).toBe("alive\n");
  });

  it("stops them when the sandbox is released by a process that never acquired it", async () => {
    const root = await folders.make();
    await crashWhileRunning(root, "run-2", "sleep 1000 & echo $! > sleep.pid; wait");
    const adapter = new LocalSandboxAdapter({ root });
    const sleep = await pidIn(adapter, "run-2", "sleep.pid");
    expect(await stillRunning(sleep), "the command should outlive its killed host").toBe(true);
    await adapter.release("run-2");
    expect(await stillRunning(sleep)).toBe(false);
  });

  it("stops what left their process groups (setsid) when the sandbox is acquired again or released", async () => {
    const root = await folders.make();
    for (const [key, end] of [["run-5", "acquire"], ["run-6", "release"]] as const) {
      await crashWhileRunning(root, key, `${ESCAPE}; sleep 1000`);
      const adapter = new LocalSandboxAdapter({ root });
      const escaped = await pidIn(adapter, key, "escaped.pid");
      expect(await stillRunning(escaped), "the escaped process should outlive its killed host").toBe(true);
      await (end === "acquire" ? adapter.acquire(key) : adapter.release(key));
      expect(await stillRunning(escaped), `after ${end}`).toBe(false);
    }
  });

  it("leaves a recorded group alone once its pid belongs to another process", async () => {
    const root = await folders.make();
    const adapter = new LocalSandboxAdapter({ root });
    // A process of this test's own, leading its own group, standing in for one that took a dead command's pid.
    const other = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    started.push(other.pid!);
    const commands = join(adapter.folderFor("run-3"), "commands");
    await mkdir(commands, { recursive: true });
    await writeFile(join(commands, `${other.pid}.json`), JSON.stringify({ pgid: other.pid, startTime: "1" }));
    await adapter.acquire("run-3");
    await adapter.release("run-3");
    expect(await stillRunning(other.pid!)).toBe(true);
  });

  it("forgets a command's record once it ends", async () => {
    const root = await folders.make();
    const adapter = new LocalSandboxAdapter({ root });
    const box = await adapter.acquire("run-4");
    expect((await box.exec("sleep 0.1; echo done")).stdout).toBe("done\n");
    await box.exec("sleep 1000", { timeoutMs: 200 });
    const commands = join(adapter.folderFor("run-4"), "commands");
    expect(await readdir(commands).catch(() => [])).toEqual([]);
  });
});
