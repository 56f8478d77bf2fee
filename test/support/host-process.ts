import { readdirSync, readFileSync } from "node:fs";

/** Kill a host process and every descendant (children first), as a daemon killing a timed-out command's tree. */
export function killHostTree(pid: number | undefined): void {
  if (!pid) return;
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(/^PPid:\s*(\d+)$/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const kill = (target: number) => {
    for (const child of children.get(target) ?? []) kill(child);
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  kill(pid);
}
