import { readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * Whether the gateway.ts of a built agent (`artifactDir`: the folder holding its manifest.json)
 * chooses the state adapter (PostgreSQL, or a `localState()` of its own). Then its runs are kept
 * there, and `start` refuses a `--state-dir` it would not use; otherwise a release keeps them in
 * the default file state, which a deploy target puts outside every release (`start --state-dir`).
 */
export async function gatewayChoosesState(artifactDir: string): Promise<boolean> {
  const manifest = JSON.parse(await readFile(join(artifactDir, "manifest.json"), "utf8")) as { gateway?: { slots?: { state?: unknown } } };
  return manifest.gateway?.slots?.state !== undefined;
}
