import { checkSkillKey, checkSkillRecord, compareCodePoints, type SkillRecord, type SkillStore } from "@assemblyline-agents/core";

/** The skills facet in process memory; InMemoryStateAdapter delegates to it. */
export class InMemorySkillStore implements SkillStore {
  private readonly skills = new Map<string, SkillRecord>();

  async getSkill(agentId: string, name: string): Promise<SkillRecord | undefined> {
    const record = this.skills.get(keyOf(agentId, name));
    return record ? structuredClone(record) : undefined;
  }

  async listSkills(agentId: string): Promise<SkillRecord[]> {
    return [...this.skills.values()]
      .filter((record) => record.agentId === agentId)
      .sort((a, b) => compareCodePoints(a.name, b.name))
      .map((record) => structuredClone(record));
  }

  async putSkill(record: SkillRecord, options: { expectedDigest: string | null }): Promise<boolean> {
    checkSkillRecord(record);
    const key = keyOf(record.agentId, record.name);
    if ((this.skills.get(key)?.digest ?? null) !== options.expectedDigest) return false;
    this.skills.set(key, structuredClone(record));
    return true;
  }

  async deleteSkill(agentId: string, name: string, options: { expectedDigest: string }): Promise<boolean> {
    checkSkillKey(agentId, name, "deleteSkill");
    const key = keyOf(agentId, name);
    if (this.skills.get(key)?.digest !== options.expectedDigest) return false;
    this.skills.delete(key);
    return true;
  }
}

function keyOf(agentId: string, name: string): string {
  return JSON.stringify([agentId, name]);
}
