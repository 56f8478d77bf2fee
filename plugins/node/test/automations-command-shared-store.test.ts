import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { noopLogger, type ScheduleRecord } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { Automations, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { main } from "../src/cli/main.js";
import { tempDir } from "./support/host.js";

const agent = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "ticker", model: "scripted:unused" });\n`;
const automation = (schedule: string, message: string) => `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: ${schedule}, message: ${JSON.stringify(message)} });\n`;

function folder(prefix: string, files: Record<string, string>): string {
  const agentDir = join(tempDir(prefix), "agent");
  for (const [file, text] of Object.entries({ "agent.ts": agent, ...files })) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  return agentDir;
}

function capture() {
  const lines: string[] = [];
  return { lines, io: { out: (line: string) => void lines.push(line), err: (line: string) => void lines.push(line) } };
}

/** The schedule rows as stored, without their leases. */
async function rows(stateDir: string): Promise<Map<string, Omit<ScheduleRecord, "lease">>> {
  const state = await FileStateAdapter.open({ directory: stateDir });
  try {
    return new Map((await state.listSchedules()).map(({ lease: _lease, ...row }) => [row.id.split(":").pop()!, row]));
  } finally {
    await state.close();
  }
}

describe("assembly-line automations on a store the running hosts' build wrote", () => {
  it("list reads only; pause and resume change only the named automation's pause, never this folder's build into the store", async () => {
    // The hosts run a build with tick (every second) and report; this folder's build has another tick and nightly, and no report.
    const hostsDir = folder("al-automations-hosts-", { "automations/tick.ts": automation("{ every: 1000 }", "tick"), "automations/report.ts": automation(`"0 9 * * *"`, "report") });
    const cliDir = folder("al-automations-cli-", { "automations/tick.ts": automation("{ every: 5000 }", "tick from the laptop"), "automations/nightly.ts": automation(`"0 2 * * *"`, "nightly") });
    const stateDir = join(tempDir("al-automations-state-"), "state");
    const hosts = await loadRuntimeBundle((await buildAgent(hostsDir)).artifactRoot);
    const shared = await FileStateAdapter.open({ directory: stateDir });
    await new Automations({ store: shared, agentId: "ticker", statics: hosts.manifest.automations, submit: async () => ({ runId: "r", created: true }), logger: noopLogger() }).syncStatic();
    await shared.close();
    expect(await main(["build", cliDir], capture().io)).toBe(0);
    const cli = (...args: string[]) => main(["automations", ...args, "--agent", cliDir, "--state-dir", stateDir], capture().io);
    const written = await rows(stateDir);
    expect([...written.keys()].sort()).toEqual(["report", "tick"]);

    const listed = capture();
    expect(await main(["automations", "list", "--agent", cliDir, "--state-dir", stateDir, "--json"], listed.io)).toBe(0);
    const { automations } = JSON.parse(listed.lines[0]!).data;
    // The hosts' definitions as stored, and this folder's nightly, which no host has written, marked so.
    expect(automations.map((entry: { name: string; schedule: unknown; message: string; stored: boolean }) => [entry.name, entry.schedule, entry.message, entry.stored])).toEqual([
      ["nightly", { kind: "cron", expression: "0 2 * * *", timezone: "UTC" }, "nightly", false],
      ["report", { kind: "cron", expression: "0 9 * * *", timezone: "UTC" }, "report", true],
      ["tick", { kind: "every", everyMs: 1000 }, "tick", true],
    ]);
    const text = capture();
    expect(await main(["automations", "list", "--agent", cliDir, "--state-dir", stateDir], text.io)).toBe(0);
    expect(text.lines.join("\n")).toMatch(/nightly\s+static\s+cron "0 2 \* \* \*" UTC\s+next .*not in the state store yet/);
    expect(await rows(stateDir)).toEqual(written);

    expect(await cli("pause", "tick")).toBe(0);
    const paused = await rows(stateDir);
    expect(paused.get("report")).toEqual(written.get("report"));
    const tickBefore = written.get("tick")!;
    expect(paused.get("tick")).toEqual({ ...tickBefore, enabled: false, payload: { ...(tickBefore.payload as object), paused: true } });

    expect(await cli("resume", "tick")).toBe(0);
    const resumed = await rows(stateDir);
    expect(resumed.get("report")).toEqual(written.get("report"));
    expect(resumed.get("tick")).toMatchObject({ enabled: true, intervalMs: 1000, payload: { ...(tickBefore.payload as object), paused: false } });
    expect([...resumed.keys()].sort()).toEqual(["report", "tick"]);
  }, 60_000);

  it("pause of a file of this build with no row yet writes it paused, so it never runs until resumed; resume of one writes nothing", async () => {
    const cliDir = folder("al-automations-cli-", { "automations/nightly.ts": automation(`"0 2 * * *"`, "nightly"), "automations/hourly.ts": automation(`"0 * * * *"`, "hourly") });
    const stateDir = join(tempDir("al-automations-state-"), "state");
    expect(await main(["build", cliDir], capture().io)).toBe(0);
    const cli = (...args: string[]) => main(["automations", ...args, "--agent", cliDir, "--state-dir", stateDir], capture().io);
    expect(await cli("list")).toBe(0);
    expect([...(await rows(stateDir)).keys()]).toEqual([]);
    expect(await cli("resume", "hourly")).toBe(0);
    expect([...(await rows(stateDir)).keys()]).toEqual([]);
    expect(await cli("pause", "nightly")).toBe(0);
    const stored = await rows(stateDir);
    expect([...stored.keys()]).toEqual(["nightly"]);
    expect(stored.get("nightly")).toMatchObject({ enabled: false, payload: { name: "nightly", source: "static", paused: true } });
  }, 60_000);
});
