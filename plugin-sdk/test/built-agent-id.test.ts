import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { builtAgentId } from "@assemblyline-agents/core/deploy";

function artifactDir(manifest: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), "al-built-agent-id-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  if (manifest !== undefined) writeFileSync(join(dir, "manifest.json"), manifest);
  return dir;
}

describe("builtAgentId", () => {
  it("reads the agent id a built agent's manifest holds", async () => {
    await expect(builtAgentId(artifactDir(JSON.stringify({ agent: { id: "support-bot" } })))).resolves.toBe("support-bot");
  });

  it("is undefined for an agent that was not built, a damaged manifest, or one without a string id", async () => {
    for (const manifest of [undefined, JSON.stringify({ agent: { id: 7 } }), JSON.stringify({}), "null", "{ damaged"]) {
      await expect(builtAgentId(artifactDir(manifest))).resolves.toBeUndefined();
    }
  });
});
