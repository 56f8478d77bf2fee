import { checkSkillKey, checkSkillRecord, type SkillRecord } from "@assemblyline-agents/core";
import { jsonParam, type StateDatabase } from "../database.js";
import { SKILL_COLUMNS, decodeSkill } from "../rows.js";

export async function getSkill(db: StateDatabase, agentId: string, name: string): Promise<SkillRecord | undefined> {
  const [row] = await db.rows(`getSkill(${name})`, `SELECT ${SKILL_COLUMNS} FROM ${db.s}.skills WHERE agent_id = $1 AND name = $2`, [agentId, name]);
  return row ? decodeSkill(db.schema, row) : undefined;
}

export async function listSkills(db: StateDatabase, agentId: string): Promise<SkillRecord[]> {
  const rows = await db.rows("listSkills", `SELECT ${SKILL_COLUMNS} FROM ${db.s}.skills WHERE agent_id = $1 ORDER BY name COLLATE "C"`, [agentId]);
  return rows.map((row) => decodeSkill(db.schema, row));
}

/** Create (expectedDigest null) or replace at the digest the writer read; one statement either way. */
export async function putSkill(db: StateDatabase, record: SkillRecord, options: { expectedDigest: string | null }): Promise<boolean> {
  checkSkillRecord(record);
  const operation = `putSkill(${record.name})`;
  const values = [
    record.agentId,
    record.name,
    jsonParam(record.files, operation, "files"),
    record.digest,
    record.seedDigest,
    record.seedRevision,
    record.changedBy,
    jsonParam(record.conflict, operation, "conflict"),
    record.updatedAt,
  ];
  if (options.expectedDigest === null) {
    const result = await db.run(
      operation,
      `INSERT INTO ${db.s}.skills (${SKILL_COLUMNS}) VALUES ($1, $2, $3::json, $4, $5, $6, $7, $8::json, $9) ON CONFLICT (agent_id, name) DO NOTHING`,
      values,
    );
    return result.rowCount === 1;
  }
  const result = await db.run(
    operation,
    `UPDATE ${db.s}.skills SET files = $3::json, digest = $4, seed_digest = $5, seed_revision = $6, changed_by = $7, conflict = $8::json, updated_at = $9
     WHERE agent_id = $1 AND name = $2 AND digest = $10`,
    [...values, options.expectedDigest],
  );
  return result.rowCount === 1;
}

export async function deleteSkill(db: StateDatabase, agentId: string, name: string, options: { expectedDigest: string }): Promise<boolean> {
  checkSkillKey(agentId, name, "deleteSkill");
  const result = await db.run(`deleteSkill(${name})`, `DELETE FROM ${db.s}.skills WHERE agent_id = $1 AND name = $2 AND digest = $3`, [agentId, name, options.expectedDigest]);
  return result.rowCount === 1;
}
