import { readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The id of a built agent (`artifactDir`: the folder holding its manifest.json), for a deploy target
 * that names a release after it; undefined when the manifest cannot be read or holds no id, so the
 * target can leave saying what to run to `stageDeployBundle`.
 */
export async function builtAgentId(artifactDir: string): Promise<string | undefined> {
  const manifest = await readFile(join(artifactDir, "manifest.json"), "utf8").then(
    (text) => JSON.parse(text) as { agent?: { id?: unknown } },
    () => undefined,
  );
  return typeof manifest?.agent?.id === "string" ? manifest.agent.id : undefined;
}
