import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { sourceFileHash } from "@assemblyline-agents/core";
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
/** Inside a kept copy: the runs that continue on it, whatever state store holds them (see holdRevision). */
const HELD_BY = "held-by";

export function revisionRoot(artifactRoot: string, agentRevision: string): string {
  return join(artifactRoot, REVISIONS_DIR, agentRevision);
}

/**
 * A name beside `path` that pruning skips while fresh and removes once old: a copy being written, or one
 * being deleted. Random, so builds of one revision at the same time never share one.
 */
function asideName(path: string): string {
  return `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
}

/** Builds that keep finding the copy replaced under them give up after this many tries (each leaves a whole copy). */
const PLACE_ATTEMPTS = 5;

/**
 * Copy the build into its revision folder, once: the same revision is the same content. A copy already
 * there is trusted only when whole (see isWholeCopy); one that is not is replaced, keeping its holds.
 */
export async function snapshotRevision(agentDir: string, artifactRoot: string, manifest: AgentManifest): Promise<void> {
  const target = revisionRoot(artifactRoot, manifest.agentRevision);
  if (await isWholeCopy(target, manifest)) return;
  // Written aside and renamed into place, so a reader never sees half a revision.
  const staging = asideName(target);
  try {
    await writeCopy(agentDir, staging, manifest);
    for (let attempt = 1; ; attempt++) {
      const replaced = await moveAsideUnlessWhole(target, manifest);
      if (replaced !== undefined) await carryHolds(replaced, staging);
      const placed = await rename(staging, target).then(() => true, (error: unknown) => error);
      // Placed by another build meanwhile: the holds go to its copy (or, when none is there, stay for the next try).
      if (placed !== true) await carryHolds(staging, target);
      if (replaced !== undefined) await rm(replaced, { recursive: true, force: true }).catch(() => undefined);
      if (placed === true) return;
      // Another build of the same revision placed its copy first: identical, once whole.
      if (await isWholeCopy(target, manifest)) return;
      if (attempt === PLACE_ATTEMPTS) throw placed;
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function writeCopy(agentDir: string, staging: string, manifest: AgentManifest): Promise<void> {
  for (const source of manifest.sources) {
    const to = join(staging, SNAPSHOT_SOURCES, source.file);
    await mkdir(dirname(to), { recursive: true });
    await cp(join(agentDir, source.file), to);
  }
  await writeFile(join(staging, MANIFEST_FILE), JSON.stringify({ ...manifest, sourceRoot: SNAPSHOT_SOURCES }, null, 2) + "\n");
  // Made now: making it later would touch the copy's mtime, which says a runtime uses it.
  await mkdir(join(staging, HELD_BY));
}

/**
 * Whether the copy at `root` is this revision, whole: its manifest reads back as it, and every source
 * file it lists is there with the content it hashed. A copy that fails this is what a removal stopped
 * part way left, or a build that lost files to another writing the same folder: a run resumed on it
 * would fail, so it is never trusted.
 */
async function isWholeCopy(root: string, manifest: AgentManifest): Promise<boolean> {
  const kept = await readFile(join(root, MANIFEST_FILE), "utf8").then((text) => JSON.parse(text) as Partial<AgentManifest>, () => undefined);
  if (kept?.agentRevision !== manifest.agentRevision) return false;
  for (const source of manifest.sources) {
    const bytes = await readFile(join(root, SNAPSHOT_SOURCES, source.file)).catch(() => undefined);
    if (bytes === undefined || sourceFileHash(bytes) !== source.hash) return false;
  }
  return true;
}

/** Move the folder at `target` aside unless it is a whole copy; returns where it went, or undefined when nothing moved. */
async function moveAsideUnlessWhole(target: string, manifest: AgentManifest): Promise<string | undefined> {
  if (!existsSync(target) || (await isWholeCopy(target, manifest))) return undefined;
  const aside = asideName(target);
  // Gone meanwhile (another build moved it): the rename into place settles the rest.
  return (await rename(target, aside).then(() => true, () => false)) ? aside : undefined;
}

/** Move the holds of the copy at `from` into the one at `to`; a hold `to` has already is kept, and a folder not there takes none. */
async function carryHolds(from: string, to: string): Promise<void> {
  const holds = await readdir(join(from, HELD_BY)).catch(() => [] as string[]);
  if (holds.length === 0) return;
  await mkdir(join(to, HELD_BY)).catch(() => undefined);
  for (const hold of holds) {
    if (existsSync(join(to, HELD_BY, hold))) continue;
    // A rename keeps the hold's mtime: when it was last refreshed.
    await rename(join(from, HELD_BY, hold), join(to, HELD_BY, hold)).catch(() => undefined);
  }
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
 * One state store's runs are not another's, and every store shares the folder's kept builds: a copy
 * holds, under `held-by/`, one empty file per run that continues on it (named by the run's id), so a
 * runtime on another store leaves it. A hold is refreshed whenever that run is driven and whenever a
 * runtime on its store prunes; one not refreshed within REVISION_HOLD_MS is dropped (its store is
 * gone, or no runtime opened it for that long).
 */
export const REVISION_HOLD_MS = 30 * 24 * 60 * 60_000;

/** A run id as a file name: base64url has no "/" and no ".", whatever the id holds. */
const holdFile = (runId: string) => Buffer.from(runId, "utf8").toString("base64url");
const runOfHold = (file: string) => Buffer.from(file, "base64url").toString("utf8");

/** Record (or refresh) that run `runId` continues on `agentRevision`'s copy; a copy that is not there is left so. */
export async function holdRevision(artifactRoot: string, agentRevision: string, runId: string): Promise<void> {
  const root = revisionRoot(artifactRoot, agentRevision);
  // Never made here: a revision folder without its manifest is no build. A copy kept before holds has no held-by/ yet.
  if (!existsSync(join(root, MANIFEST_FILE))) return;
  if (!existsSync(join(root, HELD_BY))) await mkdir(join(root, HELD_BY)).catch(() => undefined);
  await writeFile(join(root, HELD_BY, holdFile(runId)), "").catch(() => undefined);
}

/**
 * Whether a run of another state store holds the copy at `root`. `ownRun` says whether a run id is
 * one of the pruning runtime's store: its holds there are stale (that store's unfinished runs were
 * all counted in `keep`) and are removed, as are holds older than `holdMs`.
 */
async function heldElsewhere(root: string, ownRun: (runId: string) => Promise<boolean>, holdMs: number): Promise<boolean> {
  const held = join(root, HELD_BY);
  const files = await readdir(held).catch(() => [] as string[]);
  for (const file of files) {
    const refreshed = await stat(join(held, file)).then((found) => found.mtimeMs, () => undefined);
    if (refreshed === undefined) continue;
    if (Date.now() - refreshed >= holdMs || (await ownRun(runOfHold(file)))) {
      await rm(join(held, file), { force: true });
      continue;
    }
    return true;
  }
  return false;
}

/** What pruneRevisions needs besides the revisions to keep. */
export interface PruneOptions {
  /** Whether a run id is one of this runtime's store (see heldElsewhere); left out, every hold is another store's. */
  ownRun?: (runId: string) => Promise<boolean>;
  inUseMs?: number;
  holdMs?: number;
}

/**
 * Remove every kept revision not in `keep`, not marked in use within `inUseMs` and not held by a run of
 * another store; returns the removed ones. Each is renamed aside before it is deleted, so a removal
 * that stops part way leaves a `.tmp` folder (removed by a later prune once it is old), never a
 * revision folder that looks like a build.
 */
export async function pruneRevisions(artifactRoot: string, keep: ReadonlySet<string>, options: PruneOptions = {}): Promise<string[]> {
  const { ownRun = async () => false, inUseMs = REVISION_IN_USE_MS, holdMs = REVISION_HOLD_MS } = options;
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
    if (await heldElsewhere(join(dir, entry), ownRun, holdMs)) continue;
    const aside = asideName(join(dir, entry));
    // Gone meanwhile: another process pruned it.
    if (!(await rename(join(dir, entry), aside).then(() => true, () => false))) continue;
    await rm(aside, { recursive: true, force: true });
    removed.push(entry);
  }
  return removed;
}
