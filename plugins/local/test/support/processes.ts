import { readFile } from "node:fs/promises";

/** Whether `pid` still runs a few hundred ms on; a killed child is a zombie until its parent reaps it. */
export async function stillRunning(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    let state: string | undefined;
    try {
      state = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.[0];
    } catch {
      try {
        process.kill(pid, 0);
        state = "R";
      } catch {
        return false;
      }
    }
    if (state === "Z" || state === "X") return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return true;
}

/** SIGKILL `pid` if it still runs: a test's own cleanup of what it started. */
export function killIfRunning(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** Wait until `file` holds a whole line (a pid a command writes), polling. */
export async function waitForLine(file: string): Promise<string> {
  for (;;) {
    const text = await readFile(file, "utf8").catch(() => "");
    if (text.endsWith("\n")) return text.trim();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
