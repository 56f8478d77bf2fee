import { isAssemblyLineError } from "@assemblyline-agents/core";
import { spawn } from "node:child_process";
import { readFile, symlink } from "node:fs/promises";
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

    const state = await FileStateAdapter.open({ directory });
    await state.createRun({ id: "after", agentId: "agent", agentRevision: "rev", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
    await state.close();
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.getRun("after"))?.id).toBe("after");
    await reopened.close();
  });
});
