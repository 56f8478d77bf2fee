import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli/main.js";
import { openLocalRuntime } from "../src/cli/local-runtime.js";
import { tempDir } from "./support/host.js";

const agentTs = (policy: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "poller", model: "scripted:unused"${policy} });\n`;

function writeFiles(agentDir: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(agentDir, file, ".."), { recursive: true });
    writeFileSync(join(agentDir, file), text);
  }
}

function capture() {
  const lines: string[] = [];
  return { lines, io: { out: (line: string) => void lines.push(line), err: (line: string) => void lines.push(line) } };
}

describe("assembly-line automations list with dynamicAutomations.dynamic off", () => {
  it("says a run-created automation is held instead of printing the due time it will not run at", async () => {
    const agentDir = join(tempDir("al-automations-held-"), "agent");
    writeFiles(agentDir, {
      "agent.ts": agentTs(", dynamicAutomations: { dynamic: true }"),
      "automations/nightly.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: "0 2 * * *", message: "nightly report" });\n`,
    });
    expect(await main(["build", agentDir], capture().io)).toBe(0);
    const local = await openLocalRuntime({ agentDir, build: false, checkAgentModel: false });
    try {
      await local.runtime.automations.syncStatic();
      await local.runtime.automations.create({ name: "poll", schedule: { every: 60_000 }, message: "poll the feed" });
    } finally {
      await local.close();
    }
    // The next build turns run-created automations off: the one stored is held.
    writeFiles(agentDir, { "agent.ts": agentTs("") });
    expect(await main(["build", agentDir], capture().io)).toBe(0);

    const listed = capture();
    expect(await main(["automations", "list", "--agent", agentDir], listed.io)).toBe(0);
    const text = listed.lines.join("\n");
    expect(text).toMatch(/^poll\s+dynamic\s+every 60000 ms\s+held \(dynamicAutomations\.dynamic is off\)\s+"poll the feed"$/m);
    expect(text).toMatch(/^nightly\s+static\s+cron "0 2 \* \* \*" UTC\s+next \d{4}-/m);

    const json = capture();
    expect(await main(["automations", "list", "--agent", agentDir, "--json"], json.io)).toBe(0);
    const automations = JSON.parse(json.lines[0]!).data.automations as Array<{ name: string; held: boolean; nextRunAt: string | null }>;
    expect(automations.map(({ name, held }) => ({ name, held }))).toEqual([
      { name: "nightly", held: false },
      { name: "poll", held: true },
    ]);
    expect(automations.find((automation) => automation.name === "poll")!.nextRunAt).toEqual(expect.any(String));

    const paused = capture();
    expect(await main(["automations", "pause", "poll", "--agent", agentDir], paused.io)).toBe(0);
    expect(paused.lines.join("\n")).toMatch(/^poll\s+dynamic\s+every 60000 ms\s+paused, held \(dynamicAutomations\.dynamic is off\)/m);
  }, 60_000);
});
