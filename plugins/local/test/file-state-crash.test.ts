import { spawn } from "node:child_process";
import { appendFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";

const writer = fileURLToPath(new URL("./fixtures/crash-writer.mjs", import.meta.url));
const KILLS = 20;

/** Run the writer, SIGKILL it at a random moment (sometimes while it is still opening), wait for it to die. */
function runAndKill(directory: string, acked: Map<string, number>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writer, directory], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    let buffered = "";
    const kill = (afterMs: number) => setTimeout(() => child.kill("SIGKILL"), afterMs);
    const early = Math.random() < 0.25;
    if (early) kill(Math.random() * 150);
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "ready" && !early) kill(20 + Math.random() * 400);
        const ack = /^ack (\S+) (\d+)$/.exec(line);
        if (ack) acked.set(ack[1]!, Math.max(acked.get(ack[1]!) ?? 0, Number(ack[2])));
      }
    });
    // "exit" fires after the child is reaped, so its pid is gone and its lock is stale.
    child.on("exit", (code, signal) => {
      if (signal === "SIGKILL") resolve();
      else reject(new Error(`the writer exited with ${code ?? signal} before it was killed:\n${stderr}`));
    });
  });
}

/** Append half a record to the newest log, as a write cut short by a power loss would. */
async function tearLogTail(directory: string): Promise<void> {
  const logs = (await readdir(directory)).filter((name) => /^log-\d+\.wal$/.test(name));
  const newest = logs.sort((a, b) => Number(a.slice(4, -4)) - Number(b.slice(4, -4))).pop();
  if (newest) await appendFile(join(directory, newest), '1a2b3c4d {"ops":[{"op":"events.append","runId":"r');
}

describe("FileStateAdapter under kill -9", () => {
  it("keeps every run's log contiguous with each event's state change, across 20 kills", async () => {
    const directory = await mkdtemp(join(tmpdir(), "al-file-state-crash-"));
    try {
      const acked = new Map<string, number>();
      for (let kill = 0; kill < KILLS; kill += 1) {
        await runAndKill(directory, acked);
        // A kill never tears a single write(); a power cut can. Leave a torn record now and then.
        if (Math.random() < 0.3) await tearLogTail(directory);
      }

      const state = await FileStateAdapter.open({ directory });
      const runs = (await state.listRuns({ limit: 1_000 })).runs;
      expect(runs.length).toBeGreaterThan(0);
      let ticks = 0;
      for (const run of runs) {
        const events = await state.listEvents(run.id);
        expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
        expect(run.lastSeq).toBe(events.length);
        expect(events[0]?.type).toBe("run.created");
        const steps = new Set<string>();
        let lastTick: number | null = null;
        for (const [index, event] of events.entries()) {
          if (event.type !== "tick") continue;
          const n = event.data.n as number;
          // The tick at seq n was appended with its tock, its step, its tool call and run.output = n.
          expect(event.seq).toBe(n);
          expect(events[index + 1]).toMatchObject({ type: "tock", data: { n } });
          expect(await state.getStep(run.id, `step-${n}`)).toMatchObject({ result: n });
          expect(await state.getToolCall(run.id, `call-${n}`)).toMatchObject({ output: { n } });
          steps.add(`step-${n}`);
          lastTick = n;
          ticks += 1;
        }
        // No change survived without its event.
        expect((await state.listToolCalls(run.id)).map((call) => `step-${call.callId.slice(5)}`).sort()).toEqual([...steps].sort());
        expect(run.output).toBe(lastTick);
        // Every append the writer saw resolve is on disk.
        expect(run.lastSeq).toBeGreaterThanOrEqual((acked.get(run.id) ?? 0) + 1);
      }
      expect(ticks).toBeGreaterThan(0);
      await state.close();
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
