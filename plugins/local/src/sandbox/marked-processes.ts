import { createHash, randomUUID } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { SANDBOX_COMMAND_MARK_VARIABLE } from "@assemblyline-agents/core";

/*
 * A process that leaves the command's process group (`setsid cmd &`) escapes the
 * group kill. Every command gets this variable, which its children inherit, so
 * such a process is still found: by reading /proc/<pid>/environ, the environment
 * it was started with. A process started with a cleared environment (`env -i`)
 * carries no marker and is not found; nor is anything where /proc is missing.
 */

/** Passes over /proc before giving up on a process that keeps forking marked children. */
const MAX_PASSES = 10;

/** The part of the marker shared by every command of the sandbox in `folder`: the same in every process that opens it. */
export function sandboxMarker(folder: string): string {
  return createHash("sha256").update(folder).digest("hex").slice(0, 24);
}

/** A marker value of one command of the sandbox marked `sandbox`. */
export function commandMarker(sandbox: string): string {
  return `${sandbox}/${randomUUID()}`;
}

/**
 * SIGKILL every process whose environment holds the marker `value` (a command's),
 * or any marker starting with `${value}/` when `wholeSandbox` (every command of a
 * sandbox), and the process group each leads. Passes repeat until one finds
 * nothing, so a child forked while a pass ran is caught by the next.
 */
export async function killMarkedProcesses(value: string, wholeSandbox = false): Promise<void> {
  const needle = Buffer.from(wholeSandbox ? `${SANDBOX_COMMAND_MARK_VARIABLE}=${value}/` : `${SANDBOX_COMMAND_MARK_VARIABLE}=${value}\0`);
  // A killed process may still be exiting when the next pass reads it: one kill each.
  const killed = new Set<number>();
  for (let pass = 0; pass < MAX_PASSES; pass += 1) {
    const pids = (await readdir("/proc").catch(() => [] as string[])).filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => !killed.has(pid));
    const marked = (await Promise.all(pids.map(async (pid) => ((await isMarked(pid, needle)) ? pid : undefined)))).filter((pid): pid is number => pid !== undefined);
    if (marked.length === 0) return;
    for (const pid of marked) {
      killed.add(pid);
      // A leader's group may hold children that cleared their environment.
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, "SIGKILL");
        } catch {
          // ESRCH: no such group, or it ended already.
        }
      }
    }
  }
}

async function isMarked(pid: number, needle: Buffer): Promise<boolean> {
  if (pid === process.pid) return false;
  // Another user's process (EACCES), or one that ended since the listing.
  const environ = await readFile(`/proc/${pid}/environ`).catch(() => undefined);
  if (environ === undefined) return false;
  // Whole entries only: the marker at the start, or right after another entry's NUL.
  for (let at = environ.indexOf(needle); at !== -1; at = environ.indexOf(needle, at + 1)) {
    if (at === 0 || environ[at - 1] === 0) return true;
  }
  return false;
}
