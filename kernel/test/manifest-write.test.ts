import { readdirSync, statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

describe("assembly-line build", () => {
  it("replaces manifest.json whole (write-temp, then rename), leaving no temp file behind", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
    const first = await buildAgent(dir);
    const before = statSync(first.manifestPath).ino;
    const second = await buildAgent(dir);
    // A rename puts a new file in place; an in-place write would keep the inode a reader may have half-read.
    expect(statSync(second.manifestPath).ino).not.toBe(before);
    expect(readdirSync(second.artifactRoot).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });
});
