import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "../../errors.js";
import type { SkillRecord, SkillStore } from "../../state/index.js";
import { uniqueId, useSubject, type StateKitFactory } from "./subject.js";

function skill(agentId: string, name: string, body: string, extra: Partial<SkillRecord> = {}): SkillRecord {
  return {
    agentId,
    name,
    files: { "SKILL.md": `---\ndescription: ${name}\n---\n${body}`, "references/notes.md": `notes for ${name}` },
    digest: `digest-${body}`,
    seedDigest: `digest-${body}`,
    seedRevision: "rev_1",
    changedBy: "seed",
    conflict: null,
    updatedAt: new Date().toISOString(),
    ...extra,
  };
}

/** The `skills` facet: per-agent skill folders, written compare-and-set on their digest. */
export function describeSkillStoreConformance(name: string, factory: StateKitFactory<SkillStore>): void {
  describe(`${name}: SkillStore conformance`, () => {
    const store = useSubject(factory);

    it("creates a skill only when none exists, and reads back every file", async () => {
      const agent = uniqueId("agent");
      const record = skill(agent, "release-notes", "v1");
      expect(await store().getSkill(agent, "release-notes")).toBeUndefined();
      expect(await store().putSkill(record, { expectedDigest: null })).toBe(true);
      expect(await store().getSkill(agent, "release-notes")).toEqual(record);
      // A second create of the same name loses: the skill already exists.
      expect(await store().putSkill(skill(agent, "release-notes", "other"), { expectedDigest: null })).toBe(false);
      expect((await store().getSkill(agent, "release-notes"))?.digest).toBe("digest-v1");
    });

    it("updates only when the writer read the current digest", async () => {
      const agent = uniqueId("agent");
      await store().putSkill(skill(agent, "triage", "v1"), { expectedDigest: null });
      const changed = skill(agent, "triage", "v2", { changedBy: "agent", seedDigest: "digest-v1" });
      expect(await store().putSkill(changed, { expectedDigest: "digest-v1" })).toBe(true);
      expect(await store().putSkill(skill(agent, "triage", "v3", { changedBy: "agent" }), { expectedDigest: "digest-v1" })).toBe(false);
      const stored = await store().getSkill(agent, "triage");
      expect(stored).toMatchObject({ digest: "digest-v2", changedBy: "agent", seedDigest: "digest-v1" });
      expect(stored?.files["SKILL.md"]).toContain("v2");
    });

    it("records and clears a seed conflict", async () => {
      const agent = uniqueId("agent");
      await store().putSkill(skill(agent, "triage", "mine", { changedBy: "user", seedDigest: "digest-seed1" }), { expectedDigest: null });
      const conflict = { seedDigest: "digest-seed2", seedRevision: "rev_2", detectedAt: new Date().toISOString() };
      const withConflict = { ...(await store().getSkill(agent, "triage"))!, conflict };
      expect(await store().putSkill(withConflict, { expectedDigest: "digest-mine" })).toBe(true);
      expect((await store().getSkill(agent, "triage"))?.conflict).toEqual(conflict);
    });

    it("lists one agent's skills sorted by name, never another agent's", async () => {
      const agent = uniqueId("agent");
      const other = uniqueId("agent");
      for (const skillName of ["zeta", "alpha", "mid"]) await store().putSkill(skill(agent, skillName, skillName), { expectedDigest: null });
      await store().putSkill(skill(other, "alpha", "theirs"), { expectedDigest: null });
      expect((await store().listSkills(agent)).map((record) => record.name)).toEqual(["alpha", "mid", "zeta"]);
      expect((await store().listSkills(other)).map((record) => record.digest)).toEqual(["digest-theirs"]);
      expect(await store().listSkills(uniqueId("agent"))).toEqual([]);
    });

    it("deletes only at the digest the caller read", async () => {
      const agent = uniqueId("agent");
      await store().putSkill(skill(agent, "old", "v1"), { expectedDigest: null });
      expect(await store().deleteSkill(agent, "old", { expectedDigest: "digest-stale" })).toBe(false);
      expect(await store().getSkill(agent, "old")).toBeDefined();
      expect(await store().deleteSkill(agent, "old", { expectedDigest: "digest-v1" })).toBe(true);
      expect(await store().getSkill(agent, "old")).toBeUndefined();
      expect(await store().deleteSkill(agent, "old", { expectedDigest: "digest-v1" })).toBe(false);
    });

    it("lets exactly one of 10 racing writers of the same version win", async () => {
      const agent = uniqueId("agent");
      await store().putSkill(skill(agent, "race", "base"), { expectedDigest: null });
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, index) => store().putSkill(skill(agent, "race", `w${index}`, { changedBy: "agent" }), { expectedDigest: "digest-base" })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect((await store().getSkill(agent, "race"))?.digest).toBe(`digest-w${winner}`);
    });

    it("refuses a malformed record with AL_ERR_STATE_INPUT_INVALID and keeps what was stored", async () => {
      const agent = uniqueId("agent");
      await store().putSkill(skill(agent, "kept", "v1"), { expectedDigest: null });
      const bad: unknown[] = [
        { ...skill(agent, "kept", "v2"), files: { "notes.md": "no SKILL.md" } },
        { ...skill(agent, "kept", "v2"), files: { "SKILL.md": "x", "../escape.md": "y" } },
        { ...skill(agent, "Bad Name", "v2") },
        { ...skill("", "kept", "v2") },
      ];
      for (const record of bad) {
        const error = await store()
          .putSkill(record as SkillRecord, { expectedDigest: "digest-v1" })
          .then(() => undefined, (caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_STATE_INPUT_INVALID"), `expected a refusal for ${JSON.stringify(record).slice(0, 80)}`).toBe(true);
      }
      expect((await store().getSkill(agent, "kept"))?.digest).toBe("digest-v1");
    });
  });
}
