import { isAssemblyLineError } from "@assemblyline-agents/core";
import { spawn } from "node:child_process";
import { readFile, readdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { tempFolders } from "./support/state-folders.js";

/*
 * A holder killed while its parent does not reap it stays a zombie: kill(pid, 0) still answers and
 * /proc still shows its start time, yet it holds nothing. In a container whose pid 1 reaps no
 * orphans, that is every killed holder, and a folder it held must open again.
 */

const holderScript = fileURLToPath(new URL("./support/namespace-lock-holder.mjs", import.meta.url));
const folders = tempFolders("al-folder-lock-zombie-");
afterEach(() => folders.removeAll());

/** The state field of /proc/<pid>/stat, read after the command name's last ")". */
async function processState(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(")") + 2)[0];
}

/**
 * Whether the process is a zombie in every thread: its main thread shows Z as soon as it is torn down, while
 * the others (Node's thread pool) may still be exiting, and the lock takes over only once none runs.
 */
async function everyThreadZombie(pid: number): Promise<boolean> {
  const threads = await readdir(`/proc/${pid}/task`).catch(() => []);
  const states = await Promise.all(threads.map(async (tid) => (await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8").catch(() => undefined))?.split(") ").pop()?.[0]));
  return threads.length > 0 && states.every((state) => state === undefined || state === "Z" || state === "X");
}

/**
 * A python3 holder of `directory` that writes its LOCK as FileStateAdapter does, starts a thread that runs
 * until its stdin closes, then ends its main thread (pthread_exit): /proc/<pid>/stat then shows state Z,
 * while the process lives on and could still write, as Node.js exiting with a thread-pool thread stuck in
 * a write to hung storage would. Its pid, and `end`, which closes its stdin and waits until it is reaped.
 */
async function holdWithExitedMainThread(directory: string): Promise<{ pid: number; end: () => Promise<void> }> {
  const script = [
    "import ctypes, json, os, socket, sys, threading",
    "boot = open('/proc/sys/kernel/random/boot_id').read().strip()",
    "stat = open('/proc/self/stat').read()",
    "started = stat[stat.rindex(')') + 2:].split(' ')[19]",
    "owner = {'pid': os.getpid(), 'host': socket.gethostname(), 'token': 'python-holder', 'process': 'python-holder', 'started': boot + ':' + started, 'pidNamespace': boot + ' ' + os.readlink('/proc/self/ns/pid')}",
    "with open(os.path.join(sys.argv[1], 'LOCK'), 'x') as lock: lock.write(json.dumps(owner))",
    "threading.Thread(target=sys.stdin.read, daemon=False).start()",
    "print(os.getpid(), flush=True)",
    "ctypes.CDLL(None).pthread_exit(None)",
  ].join("\n");
  const holder = spawn("python3", ["-c", script, directory], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => holder.once("exit", resolve));
  const end = async () => {
    holder.stdin.end();
    await exited;
  };
  onTestFinished(async () => {
    holder.kill("SIGKILL");
    await exited;
  });
  const pid = await new Promise<number>((resolve, reject) => {
    holder.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    holder.once("exit", (code, signal) => reject(new Error(`the python3 holder exited (${code ?? signal}) before it wrote the LOCK`)));
  });
  return { pid, end };
}

/**
 * Start the holder of `directory` under a parent that never reaps it: `sh` starts it in the background,
 * prints its pid, then becomes `sleep`. The holder runs as `command`, its command name in /proc.
 */
async function holdUnreaped(directory: string, command: string): Promise<number> {
  const parent = spawn("sh", ["-c", `"$0" "$1" "$2" & echo "$!"; exec sleep 600`, command, holderScript, directory], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => parent.once("exit", resolve));
  onTestFinished(async () => {
    // The holder, then its parent: the holder (a zombie by then) goes to an ancestor that reaps it.
    if (holderPid !== undefined) {
      try {
        process.kill(holderPid, "SIGKILL");
      } catch {
        // Already dead.
      }
    }
    parent.kill("SIGKILL");
    await exited;
  });
  let holderPid: number | undefined;
  const opened = new Promise<number>((resolve, reject) => {
    let stdout = "";
    parent.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split("\n").slice(0, -1)) {
        if (/^\d+$/.test(line)) holderPid = Number(line);
        else if (line.startsWith("{")) {
          const outcome = JSON.parse(line) as { opened?: boolean; refused?: string; message?: string };
          if (outcome.opened === true && holderPid !== undefined) resolve(holderPid);
          else reject(new Error(`the holder did not open the folder: ${line}`));
        }
      }
    });
    parent.once("exit", (code, signal) => reject(new Error(`the holder's parent exited (${code ?? signal}) before the holder opened the folder`)));
  });
  return opened;
}

describe.runIf(process.platform === "linux")("FolderLock: a holder that died but was not reaped", () => {
  it("refuses the folder while the holder runs, and takes it over once the holder is a zombie", async () => {
    const directory = await folders.make();
    // A command name with ") Z (" in it: a reader that takes the state after the first ")" would judge this live holder a zombie.
    const command = join(await folders.make(), "x) Z (y");
    await symlink(process.execPath, command);
    const holderPid = await holdUnreaped(directory, command);
    expect(await processState(holderPid)).not.toBe("Z");

    const whileAlive = await FileStateAdapter.open({ directory }).catch((error: unknown) => error);
    expect(isAssemblyLineError(whileAlive, "AL_ERR_STATE_LOCKED")).toBe(true);
    expect((whileAlive as Error).message).toContain(`locked by pid ${holderPid}`);

    process.kill(holderPid, "SIGKILL");
    // Dead at once, but a zombie only once the kernel has torn it down.
    for (let state = await processState(holderPid); state !== "Z"; state = await processState(holderPid)) {
      expect(state, "the holder is reaped by no one").toBeDefined();
      await sleep(20);
    }
    while (!(await everyThreadZombie(holderPid))) await sleep(20);

    const state = await FileStateAdapter.open({ directory });
    await state.createRun({ id: "after", agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
    await state.close();
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.getRun("after"))?.id).toBe("after");
    await reopened.close();
  });

  it("refuses the folder while a holder whose main thread exited still runs another thread", async () => {
    const directory = await folders.make();
    const holder = await holdWithExitedMainThread(directory);
    // The main thread exited: the process's state reads Z, as a zombie's does.
    for (let state = await processState(holder.pid); state !== "Z"; state = await processState(holder.pid)) {
      expect(state, "the holder runs").toBeDefined();
      await sleep(20);
    }

    const whileThreadRuns = await FileStateAdapter.open({ directory }).catch((error: unknown) => error);
    expect(isAssemblyLineError(whileThreadRuns, "AL_ERR_STATE_LOCKED")).toBe(true);
    expect((whileThreadRuns as Error).message).toContain(`locked by pid ${holder.pid}`);

    // Once its last thread ended, the holder is dead, and the folder is taken over.
    await holder.end();
    const state = await FileStateAdapter.open({ directory });
    await state.putSetting("after", "taken over", { actor: "t" });
    await state.close();
  });
});
