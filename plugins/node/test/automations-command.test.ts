import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli/main.js";
import { devCommand } from "../src/cli/commands/serve.js";
import type { NodeRuntimeHandle } from "../src/host/server.js";
import { tempDir } from "./support/host.js";

function agentFolder(): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-automations-cli-"), "agent");
  const files: Record<string, string> = {
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "ticker", model: "scripted:unused" });\n`,
    "automations/tick.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { every: 1000 }, message: "tick" });\n`,
    "automations/nightly.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: { cron: "0 2 * * *", timezone: "Asia/Tokyo" }, message: "nightly report" });\n`,
    "script.json": JSON.stringify({ turns: [{ text: "tock" }] }),
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
  return { agentDir, script: join(agentDir, "script.json") };
}

function capture() {
  const lines: string[] = [];
  return { lines, io: { out: (line: string) => void lines.push(line), err: (line: string) => void lines.push(line) } };
}

describe("automations from the command line and the dev host", () => {
  it("dev runs the scheduler: a static automation starts runs on its own", async () => {
    const { agentDir, script } = agentFolder();
    const { io, lines } = capture();
    let handle: NodeRuntimeHandle | undefined;
    const serving = devCommand([agentDir, "--port", "0", "--model", `scripted:${script}`], io, { installSignals: false, onListening: (ready) => (handle = ready) });
    const deadline = Date.now() + 30_000;
    let completed: Array<{ input: { metadata: Record<string, unknown> }; output: unknown }> = [];
    while (Date.now() < deadline) {
      if (handle) {
        const { runs } = await handle.runtime.state.runs.listRuns({ status: "completed" });
        completed = runs as never;
        if (completed.length > 0) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await handle?.shutdown();
    await serving;
    expect(lines.join("\n")).toMatch(/scheduler: 2 static automation\(s\)/);
    expect(completed[0]).toMatchObject({ input: { metadata: { automation: { name: "tick", source: "static", dueAt: expect.any(String) } } }, output: { text: "tock" } });
  }, 60_000);

  it("lists, pauses, resumes and runs automations", async () => {
    const { agentDir, script } = agentFolder();
    expect(await main(["build", agentDir], capture().io)).toBe(0);

    const listed = capture();
    expect(await main(["automations", "list", "--agent", agentDir], listed.io)).toBe(0);
    expect(listed.lines.join("\n")).toMatch(/nightly\s+static\s+cron "0 2 \* \* \*" Asia\/Tokyo\s+next \d{4}-/);
    expect(listed.lines.join("\n")).toMatch(/tick\s+static\s+every 1000 ms\s+next /);

    const paused = capture();
    expect(await main(["automations", "pause", "tick", "--agent", agentDir], paused.io)).toBe(0);
    const afterPause = capture();
    await main(["automations", "list", "--agent", agentDir, "--json"], afterPause.io);
    expect(JSON.parse(afterPause.lines[0]!).data.automations.find((automation: { name: string }) => automation.name === "tick")).toMatchObject({ paused: true, nextRunAt: null });

    const ran = capture();
    expect(await main(["automations", "run", "tick", "--agent", agentDir, "--model", `scripted:${script}`], ran.io)).toBe(0);
    expect(ran.lines.join("\n")).toContain("tock");

    expect(await main(["automations", "resume", "tick", "--agent", agentDir], capture().io)).toBe(0);
    const afterResume = capture();
    await main(["automations", "list", "--agent", agentDir, "--json"], afterResume.io);
    expect(JSON.parse(afterResume.lines[0]!).data.automations.find((automation: { name: string }) => automation.name === "tick")).toMatchObject({ paused: false, nextRunAt: expect.any(String) });

    const missing = capture();
    expect(await main(["automations", "pause", "nope", "--agent", agentDir], missing.io)).toBe(1);
    expect(missing.lines.join("\n")).toMatch(/AL_ERR_AUTOMATION_NOT_FOUND.*"nope"/);
    expect(await main(["automations", "frobnicate"], capture().io)).toBe(2);
  }, 60_000);
});
