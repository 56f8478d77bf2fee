import { readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The id of a built agent (`artifactDir`: the folder holding its manifest.json), for a deploy target
 * that names a release after it; undefined when the manifest cannot be read or holds no id, so the
 * target can leave saying what to run to `stageDeployBundle`.
 */
export async function builtAgentId(artifactDir: string): Promise<string | undefined> {
  const text = await readFile(join(artifactDir, "manifest.json"), "utf8").catch(() => undefined);
  let manifest: { agent?: { id?: unknown } } | null | undefined;
  try {
    manifest = text === undefined ? undefined : (JSON.parse(text) as typeof manifest);
  } catch {
    // A damaged manifest names no agent, as a missing one does: the target says what to run.
    return undefined;
  }
  return typeof manifest?.agent?.id === "string" ? manifest.agent.id : undefined;
}
