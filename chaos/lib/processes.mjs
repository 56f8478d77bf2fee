// Child processes the suite starts, so it can stop every one of them itself,
// whatever happens (a frozen one is woken first, or SIGKILL would wait for it).
import { spawn } from "node:child_process";

const started = new Set();

export function track(child) {
  started.add(child);
  child.once("exit", () => started.delete(child));
  return child;
}

export function stopAll() {
  for (const child of started) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Run `node args`, SIGKILLing it `killAfterMs` after it started, or with `afterOutput`,
 * that long after its first line of output (if it is still running).
 * @returns {Promise<{ killed: boolean, code: number | null, stdout: string, stderr: string, ms: number, afterOutputMs: number }>}
 */
export function runNode(args, { env, killAfterMs, afterOutput = false } = {}) {
  const begun = Date.now();
  const child = track(spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] }));
  let stdout = "";
  let stderr = "";
  let timer;
  let firstOutputAt;
  const arm = () => killAfterMs !== undefined && (timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs));
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    if (firstOutputAt === undefined) {
      firstOutputAt = Date.now();
      if (afterOutput) arm();
    }
  });
  child.stderr.on("data", (chunk) => (stderr += chunk));
  if (!afterOutput) arm();
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      const now = Date.now();
      resolve({ killed: signal === "SIGKILL", code, stdout, stderr, ms: now - begun, afterOutputMs: firstOutputAt === undefined ? 0 : now - firstOutputAt });
    });
  });
}

/** Poll `probe` until it returns something other than undefined, or give up after `timeoutMs` (returns undefined). */
export async function waitFor(probe, timeoutMs, intervalMs = 200) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) return undefined;
    await sleep(intervalMs);
  }
}
