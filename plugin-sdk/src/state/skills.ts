/**
 * The durable skill store: `skills/` of the agent folder seeds it, and with
 * self-improvement the agent (or a user, through the CLI) changes it.
 *
 * A skill is a folder of text files: `SKILL.md` (front matter + procedure) and
 * resources such as `references/*.md`, keyed by path relative to the folder.
 */
export interface SkillRecord {
  /** The agent (or subagent, `parent/child`) the skill belongs to. */
  agentId: string;
  name: string;
  /** Relative path -> text. Always holds `SKILL.md`. */
  files: Record<string, string>;
  /** sha256 of the canonical files: what a compare-and-set compares. */
  digest: string;
  /** Digest of the seed the skill was last seeded from; null when the agent or a user authored it. */
  seedDigest: string | null;
  /** The revision whose seed it was last seeded from. */
  seedRevision: string | null;
  /** Who made the current content. */
  changedBy: "seed" | "agent" | "user";
  /**
   * A redeploy brought a different seed while the skill was changed: the change
   * was kept and the seed that was not applied is named here.
   */
  conflict: { seedDigest: string; seedRevision: string; detectedAt: string } | null;
  updatedAt: string;
}

/**
 * Writes are compare-and-set on `digest`: `expectedDigest` is the digest the
 * writer read (null: the skill must not exist). A stale writer gets `false` and
 * nothing changes.
 */
export interface SkillStore {
  getSkill(agentId: string, name: string): Promise<SkillRecord | undefined>;
  /** Sorted by name, in code-point order (see compareCodePoints). */
  listSkills(agentId: string): Promise<SkillRecord[]>;
  putSkill(record: SkillRecord, options: { expectedDigest: string | null }): Promise<boolean>;
  deleteSkill(agentId: string, name: string, options: { expectedDigest: string }): Promise<boolean>;
}
