import { AssemblyLineError, isSkillFilePath, isSkillName, type RuntimeSettingsStore, type SkillRecord, type SkillStore } from "@assemblyline-agents/core";
import type { AgentProfile } from "../agents/agent-profile.js";
import type { SkillManifestEntry } from "../compiler/manifest.js";
import { parseSkillFile, skillDigest } from "./skill-file.js";

/** A skill as runs see it, from the store (self-improvement) or the manifest (read-only). */
export interface SkillView {
  name: string;
  description: string;
  tools: string[];
  body: string;
  files: Record<string, string>;
  digest: string;
  changedBy: SkillRecord["changedBy"];
  seedDigest: string | null;
  conflict: SkillRecord["conflict"];
}

/** One change the seed sync made, recorded as an event of the run that triggered it. */
export interface SkillSyncChange {
  type: "skill.seeded" | "skill.upgraded" | "skill.seed_conflict" | "skill.seed_removed";
  data: { agentId: string; name: string; before: string | null; after: string | null; seedDigest: string; revision: string };
}

export interface SkillWriteResult {
  name: string;
  path: string;
  before: string | null;
  after: string | null;
}

/** What a write would put in the skill, for an approver to read: the text of each file it adds or changes, and the files it removes. */
export interface SkillWriteProposal {
  files: Record<string, string>;
  removed: string[];
}

/**
 * Asked before a write lands, with what it would write; throws to stop it
 * (e.g. to pause for approval of exactly this change).
 */
export type SkillWriteGate = (change: SkillWriteResult, proposed: SkillWriteProposal) => Promise<void>;

/**
 * The skills of one agent profile. With `selfImprovement.writable` they live
 * in the durable store, seeded from the manifest; otherwise the manifest is the
 * only source and writes are refused.
 */
export class SkillLibrary {
  private sync: Promise<SkillSyncChange[]> | undefined;
  private synced = false;

  constructor(
    private readonly profile: AgentProfile,
    private readonly store: SkillStore,
    private readonly revision: string,
    /**
     * Where a seeded skill the agent or a user deleted is remembered (`skills.removedSeed:<agent>:<name>`),
     * so the next start does not seed it again: the skill store keeps only skills that exist.
     */
    private readonly settings?: RuntimeSettingsStore,
    /**
     * Whether `revision` is the build the runtime serves. Only that build's seeds are brought into
     * the store: a run paused before a redeploy resumes on its own older build, whose seeds would
     * put old skills back and delete new ones. An older build's library reads the store as it is.
     */
    private readonly currentBuild = true,
  ) {}

  get writable(): boolean {
    return this.profile.selfImprovement.writable;
  }

  /** Bring the store in line with the manifest's seeds, once per process; later calls, and an older build's library, get []. */
  async syncSeeds(): Promise<SkillSyncChange[]> {
    if (!this.writable || !this.currentBuild) return [];
    if (this.sync) {
      await this.sync;
      return [];
    }
    this.sync = this.applySeeds().catch((error) => {
      this.sync = undefined;
      throw error;
    });
    const changes = await this.sync;
    this.synced = true;
    return changes;
  }

  async list(): Promise<SkillView[]> {
    if (!this.writable) return this.profile.skills.map(fromSeed);
    await this.ready();
    return (await this.store.listSkills(this.profile.agentId)).map(fromRecord);
  }

  async get(name: string): Promise<SkillView | undefined> {
    if (!this.writable) {
      const seed = this.profile.skills.find((skill) => skill.name === name);
      return seed ? fromSeed(seed) : undefined;
    }
    await this.ready();
    const record = await this.store.getSkill(this.profile.agentId, name);
    return record ? fromRecord(record) : undefined;
  }

  /** Create or replace one file of a skill (SKILL.md creates the skill). Compare-and-set on the digest read. */
  async writeFile(name: string, path: string, content: string, changedBy: "agent" | "user", gate?: SkillWriteGate): Promise<SkillWriteResult> {
    this.requireWritable(name);
    checkSkillTarget(name, path);
    await this.ready();
    const current = await this.store.getSkill(this.profile.agentId, name);
    if (!current && path !== "SKILL.md") {
      throw new AssemblyLineError("AL_ERR_SKILL_NOT_FOUND", `skill "${name}" does not exist, so /skills/${name}/${path} cannot be written`, {
        fix: `Create the skill first by writing /skills/${name}/SKILL.md with a description front matter.`,
      });
    }
    const files = { ...(current?.files ?? {}), [path]: content.replace(/\r\n/g, "\n") };
    if (path === "SKILL.md") this.checkSkillFile(name, files["SKILL.md"]!);
    const digest = skillDigest(files);
    const change = { name, path, before: current?.digest ?? null, after: digest };
    if (current?.digest === digest) return change;
    await gate?.(change, { files: { [path]: files[path]! }, removed: [] });
    const record: SkillRecord = {
      agentId: this.profile.agentId,
      name,
      files,
      digest,
      seedDigest: current?.seedDigest ?? null,
      seedRevision: current?.seedRevision ?? null,
      changedBy,
      conflict: current?.conflict ?? null,
      updatedAt: new Date().toISOString(),
    };
    if (!(await this.store.putSkill(record, { expectedDigest: current?.digest ?? null }))) throw conflict(name);
    return change;
  }

  /**
   * Write a whole skill folder at once: `mustExist` false creates (refused if
   * present), true updates (refused if absent). Compare-and-set on the digest read.
   */
  async putFiles(name: string, files: (current: Record<string, string> | undefined) => Record<string, string>, changedBy: "agent" | "user", mustExist: boolean, gate?: SkillWriteGate): Promise<SkillWriteResult> {
    this.requireWritable(name);
    await this.ready();
    const current = await this.store.getSkill(this.profile.agentId, name);
    if (mustExist && !current) throw notFound(name);
    const next = files(mustExist ? current?.files : undefined);
    for (const path of Object.keys(next)) checkSkillTarget(name, path);
    // Creating what already exists, identically, is a replay of the same create: nothing to do.
    if (!mustExist && current && current.digest !== skillDigest(next)) {
      throw new AssemblyLineError("AL_ERR_SKILL_CONFLICT", `skill "${name}" already exists`, { fix: "Update it instead, or pick another name." });
    }
    this.checkSkillFile(name, next["SKILL.md"] ?? "");
    const digest = skillDigest(next);
    const change = { name, path: "SKILL.md", before: current?.digest ?? null, after: digest };
    if (current?.digest === digest) return change;
    await gate?.(change, changedFiles(current?.files ?? {}, next));
    const record: SkillRecord = {
      agentId: this.profile.agentId,
      name,
      files: next,
      digest,
      seedDigest: current?.seedDigest ?? null,
      seedRevision: current?.seedRevision ?? null,
      changedBy,
      conflict: current?.conflict ?? null,
      updatedAt: new Date().toISOString(),
    };
    if (!(await this.store.putSkill(record, { expectedDigest: current?.digest ?? null }))) throw conflict(name);
    return change;
  }

  private checkSkillFile(name: string, text: string): void {
    const parsed = parseSkillFile(text, name, `/skills/${name}/SKILL.md`);
    if (parsed.name !== name) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `/skills/${name}/SKILL.md names itself "${parsed.name}"`, {
        fix: `Leave name out of the front matter, or set it to "${name}" (the folder's name).`,
      });
    }
    const unknown = parsed.tools.filter((tool) => !this.profile.table.has(tool));
    if (unknown.length > 0) {
      throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `/skills/${name}/SKILL.md activates ${unknown.join(", ")}, which this agent does not have`, {
        fix: "Name only tools of this agent in tools: [...].",
      });
    }
  }

  /** Delete one resource file, or the whole skill when `path` is SKILL.md. */
  async deleteFile(name: string, path: string, gate?: SkillWriteGate, changedBy: "agent" | "user" = "agent"): Promise<SkillWriteResult> {
    this.requireWritable(name);
    checkSkillTarget(name, path);
    await this.ready();
    const current = await this.store.getSkill(this.profile.agentId, name);
    if (!current || current.files[path] === undefined) {
      throw new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `nothing at /skills/${name}/${path}`, { fix: "List /skills first and use a path it returns." });
    }
    if (path === "SKILL.md") {
      const change = { name, path, before: current.digest, after: null };
      await gate?.(change, { files: {}, removed: Object.keys(current.files).sort() });
      // Marked before the delete: a crash between the two must not let the next start seed it again.
      const marked = this.seedOf(name) && this.settings ? this.settings : undefined;
      await marked?.putSetting(this.removalKey(name), current.seedDigest ?? current.digest, { actor: changedBy, reason: `seeded skill ${name} deleted` });
      if (!(await this.store.deleteSkill(this.profile.agentId, name, { expectedDigest: current.digest }))) {
        await marked?.putSetting(this.removalKey(name), null, { actor: changedBy, reason: `deletion of seeded skill ${name} lost to a concurrent change` });
        throw conflict(name);
      }
      return change;
    }
    const files = { ...current.files };
    delete files[path];
    const digest = skillDigest(files);
    const change = { name, path, before: current.digest, after: digest };
    await gate?.(change, { files: {}, removed: [path] });
    const record: SkillRecord = { ...current, files, digest, changedBy, updatedAt: new Date().toISOString() };
    if (!(await this.store.putSkill(record, { expectedDigest: current.digest }))) throw conflict(name);
    return change;
  }

  /** Put a skill back to its current seed (or remove it when it has none). */
  async reset(name: string): Promise<SkillWriteResult> {
    this.requireWritable(name);
    await this.ready();
    const current = await this.store.getSkill(this.profile.agentId, name);
    const seed = this.profile.skills.find((skill) => skill.name === name);
    if (!current && !seed) throw notFound(name);
    if (!seed) {
      if (!(await this.store.deleteSkill(this.profile.agentId, name, { expectedDigest: current!.digest }))) throw conflict(name);
      return { name, path: "SKILL.md", before: current!.digest, after: null };
    }
    if (!(await this.store.putSkill(this.seedRecord(seed), { expectedDigest: current?.digest ?? null }))) throw conflict(name);
    if (((await this.settings?.getSetting(this.removalKey(name))) ?? null) !== null) await this.settings?.putSetting(this.removalKey(name), null, { actor: "user", reason: `skill ${name} reset to its seed` });
    return { name, path: "SKILL.md", before: current?.digest ?? null, after: seed.digest };
  }

  private removalKey(name: string): string {
    return `skills.removedSeed:${this.profile.agentId}:${name}`;
  }

  /** The seed the manifest holds for `name`, if any. */
  seedOf(name: string): SkillManifestEntry | undefined {
    return this.profile.skills.find((skill) => skill.name === name);
  }

  private async ready(): Promise<void> {
    if (!this.synced) await this.syncSeeds();
  }

  private requireWritable(name: string): void {
    if (!this.writable) {
      throw new AssemblyLineError("AL_ERR_SKILL_READ_ONLY", `skills of ${this.profile.agentId} are manifest-only; skill "${name}" cannot be changed`, {
        fix: "Set selfImprovement: { writable: true } in agent.ts, or edit skills/ in the agent folder and rebuild.",
      });
    }
  }

  private seedRecord(seed: SkillManifestEntry): SkillRecord {
    return {
      agentId: this.profile.agentId,
      name: seed.name,
      files: seed.files,
      digest: seed.digest,
      seedDigest: seed.digest,
      seedRevision: this.revision,
      changedBy: "seed",
      conflict: null,
      updatedAt: new Date().toISOString(),
    };
  }

  /**
   * Pristine seeded skills follow the manifest; a skill the agent or a user
   * changed is kept, and a seed that could not be applied is recorded on it.
   * Every write is compare-and-set, so replicas syncing together agree.
   */
  private async applySeeds(): Promise<SkillSyncChange[]> {
    const { agentId } = this.profile;
    const changes: SkillSyncChange[] = [];
    const note = (type: SkillSyncChange["type"], name: string, before: string | null, after: string | null, seedDigest: string) =>
      changes.push({ type, data: { agentId, name, before, after, seedDigest, revision: this.revision } });
    for (const seed of this.profile.skills) {
      const current = await this.store.getSkill(agentId, seed.name);
      if (!current) {
        // Deleted by the agent or a user: kept deleted, as an edit is kept (reset puts the seed back).
        if (((await this.settings?.getSetting(this.removalKey(seed.name))) ?? null) !== null) continue;
        if (await this.store.putSkill(this.seedRecord(seed), { expectedDigest: null })) note("skill.seeded", seed.name, null, seed.digest, seed.digest);
        continue;
      }
      if (current.seedDigest === seed.digest) continue;
      const pristine = current.changedBy === "seed" && current.digest === current.seedDigest;
      if (pristine || current.digest === seed.digest) {
        if (await this.store.putSkill(this.seedRecord(seed), { expectedDigest: current.digest })) note("skill.upgraded", seed.name, current.digest, seed.digest, seed.digest);
        continue;
      }
      if (current.conflict?.seedDigest === seed.digest) continue;
      const conflict = { seedDigest: seed.digest, seedRevision: this.revision, detectedAt: new Date().toISOString() };
      if (await this.store.putSkill({ ...current, conflict }, { expectedDigest: current.digest })) note("skill.seed_conflict", seed.name, current.digest, current.digest, seed.digest);
    }
    const seeded = new Set(this.profile.skills.map((skill) => skill.name));
    for (const record of await this.store.listSkills(agentId)) {
      if (seeded.has(record.name) || record.changedBy !== "seed" || record.seedDigest === null) continue;
      if (await this.store.deleteSkill(agentId, record.name, { expectedDigest: record.digest })) note("skill.seed_removed", record.name, record.digest, null, record.seedDigest);
    }
    return changes;
  }
}

function fromSeed(seed: SkillManifestEntry): SkillView {
  const parsed = parseSkillFile(seed.files["SKILL.md"]!, seed.name, `${seed.dir}/SKILL.md`);
  return { name: seed.name, description: seed.description, tools: seed.tools, body: parsed.body, files: seed.files, digest: seed.digest, changedBy: "seed", seedDigest: seed.digest, conflict: null };
}

function fromRecord(record: SkillRecord): SkillView {
  const parsed = parseSkillFile(record.files["SKILL.md"] ?? "", record.name, `/skills/${record.name}/SKILL.md`, { stored: true });
  return {
    name: record.name,
    description: parsed.description,
    tools: parsed.tools,
    body: parsed.body,
    files: record.files,
    digest: record.digest,
    changedBy: record.changedBy,
    seedDigest: record.seedDigest,
    conflict: record.conflict,
  };
}

/**
 * Refuses a skill name or file path the store would refuse, before it gets there: a typo in a
 * /skills path is the model's mistake to correct (AL_ERR_SKILL_DEFINITION), while the store's
 * own refusal (AL_ERR_STATE_INPUT_INVALID) would fail the run.
 */
function checkSkillTarget(name: string, path: string): void {
  if (!isSkillName(name)) {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `/skills/${name}/${path}: "${name}" is not a skill name`, {
      fix: "Name the skill folder with lower-case letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. /skills/release-notes/SKILL.md).",
    });
  }
  if (!isSkillFilePath(path)) {
    throw new AssemblyLineError("AL_ERR_SKILL_DEFINITION", `/skills/${name}/${path}: "${path}" is not a file path inside the skill folder`, {
      fix: `Separate folders with '/' (never '\\') and leave out empty, '.' and '..' parts, e.g. /skills/${name}/references/notes.md.`,
    });
  }
}

function notFound(name: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SKILL_NOT_FOUND", `no skill "${name}"`, { fix: "Use a name from the skill catalog (`assembly-line skills list`)." });
}

function conflict(name: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SKILL_CONFLICT", `skill "${name}" changed while it was being written; nothing was written`, {
    fix: "Read the skill again and repeat the change on its current content.",
  });
}

export { notFound as skillNotFound };

/** The files `next` adds or changes over `current` (SKILL.md first), and those it drops. */
function changedFiles(current: Record<string, string>, next: Record<string, string>): SkillWriteProposal {
  const paths = Object.keys(next)
    .filter((path) => current[path] !== next[path])
    .sort((a, b) => (a === "SKILL.md" ? -1 : b === "SKILL.md" ? 1 : a < b ? -1 : a > b ? 1 : 0));
  return { files: Object.fromEntries(paths.map((path) => [path, next[path]!])), removed: Object.keys(current).filter((path) => !(path in next)).sort() };
}
