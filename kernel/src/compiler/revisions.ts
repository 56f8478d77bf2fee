import { existsSync } from "node:fs";
import { cp, mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { MANIFEST_FILE } from "./build.js";
import type { AgentManifest } from "./manifest.js";

/**
 * Every build keeps a content-addressed copy of itself under
 * `<artifactRoot>/revisions/<agentRevision>/` (its manifest and the source files
 * it hashed), so a run paused under one build continues on that build after the
 * folder changed and was rebuilt. Copies no unfinished run needs, and no live
 * runtime has marked in use lately, are pruned.
 */
export const REVISIONS_DIR = "revisions";
const SNAPSHOT_SOURCES = "src";

export function revisionRoot(artifactRoot: string, agentRevision: string): string {
  return join(artifactRoot, REVISIONS_DIR, agentRevision);
}

/** A name beside `path` that pruning skips while fresh and removes once old: a copy being written, or one being deleted. */
function asideName(path: string): string {
  return `${path}.${process.pid}.${Date.now()}.tmp`;
}

/** Copy the build into its revision folder (once: the same revision is the same content). */
export async function snapshotRevision(agentDir: string, artifactRoot: string, manifest: AgentManifest): Promise<void> {
  const target = revisionRoot(artifactRoot, manifest.agentRevision);
  if (existsSync(join(target, MANIFEST_FILE))) return;
  // Written aside and renamed into place, so a reader never sees half a revision.
  const staging = asideName(target);
  await rm(staging, { recursive: true, force: true });
  for (const source of manifest.sources) {
    const to = join(staging, SNAPSHOT_SOURCES, source.file);
    await mkdir(dirname(to), { recursive: true });
    await cp(join(agentDir, source.file), to);
  }
  await writeFile(join(staging, MANIFEST_FILE), JSON.stringify({ ...manifest, sourceRoot: SNAPSHOT_SOURCES }, null, 2) + "\n");
  await clearUnfinished(target);
  try {
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // Another build of the same revision won the rename: its copy is identical.
    if (!existsSync(join(target, MANIFEST_FILE))) throw error;
  }
}

/**
 * A revision folder without its manifest is no build: what a removal stopped part way left (or
 * one written before copies were renamed into place). Moved aside, so the new copy can take its name.
 */
async function clearUnfinished(target: string): Promise<void> {
  if (!existsSync(target) || existsSync(join(target, MANIFEST_FILE))) return;
  const aside = asideName(target);
  // Gone meanwhile, or another build's complete copy took the name: the rename below settles it.
  if (!(await rename(target, aside).then(() => true, () => false))) return;
  await rm(aside, { recursive: true, force: true }).catch(() => undefined);
}

/** How often a live runtime marks its build's copy in use (the folder's mtime). */
export const REVISION_MARK_INTERVAL_MS = 10 * 60_000;
/**
 * A copy marked within this long is kept whatever runs need: a host may still be serving it (a
 * dev server on the folder's previous build, an old replica), and a run it pauses later needs it
 * after a restart. Six missed marks: a host whose event loop stalls a while keeps its copy.
 */
export const REVISION_IN_USE_MS = 6 * REVISION_MARK_INTERVAL_MS;

/** Mark a revision's copy in use now; a copy that is gone (or was never made) is left so. */
export async function markRevisionInUse(artifactRoot: string, agentRevision: string): Promise<void> {
  const now = new Date();
  await utimes(revisionRoot(artifactRoot, agentRevision), now, now).catch(() => undefined);
}

/**
 * Remove every kept revision not in `keep` and not marked in use within `inUseMs`; returns the removed
 * ones. Each is renamed aside before it is deleted, so a removal that stops part way leaves a `.tmp`
 * folder (removed by a later prune once it is old), never a revision folder that looks like a build.
 */
export async function pruneRevisions(artifactRoot: string, keep: ReadonlySet<string>, inUseMs = REVISION_IN_USE_MS): Promise<string[]> {
  const dir = join(artifactRoot, REVISIONS_DIR);
  if (!existsSync(dir)) return [];
  const removed: string[] = [];
  for (const entry of await readdir(dir)) {
    if (keep.has(entry)) continue;
    const marked = await stat(join(dir, entry)).then((found) => found.mtimeMs, () => undefined);
    if (marked !== undefined && Date.now() - marked < inUseMs) continue;
    // A .tmp folder this old is a copy no build finished writing, or one a removal left.
    if (entry.endsWith(".tmp")) {
      await rm(join(dir, entry), { recursive: true, force: true });
      continue;
    }
    const aside = asideName(join(dir, entry));
    // Gone meanwhile: another process pruned it.
    if (!(await rename(join(dir, entry), aside).then(() => true, () => false))) continue;
    await rm(aside, { recursive: true, force: true });
    removed.push(entry);
  }
  return removed;
}
