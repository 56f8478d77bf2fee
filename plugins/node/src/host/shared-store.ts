import type { JsonValue, RuntimeLogger, RuntimeSettingsStore } from "@assemblyline-agents/core";

/** The settings key where each agent's host notes when it last started on the state store. */
export const STORE_AGENTS_SETTING = "state.agents";

/** Facets every agent on one store reads and writes alike: what the warning names. */
export const SHARED_FACETS = ["memory", "files"] as const;

const DAY_MS = 24 * 60 * 60 * 1000;
/** An agent that has not started for this long no longer counts as sharing the store (and is dropped from the note). */
const ACTIVE_MS = 30 * DAY_MS;
/** A host rewrites its own entry at most this often, so restarts add no settings write (and audit event) each. */
const REFRESH_MS = DAY_MS;

/**
 * Notes this agent on the store (`state.agents`: agent id to its last start) and returns the other
 * agents that started on it within 30 days. Runs, replies, history, schedules and the kill switch
 * are kept apart per agent; `/memory` and `/files` are not, so a host on a store another agent uses
 * warns at boot (`state.shared_store`). Two hosts starting at the same moment may each miss the
 * other's note: the one whose note was lost writes it again at its next start. Never blocks boot.
 */
export async function noteAgentOnStore(settings: RuntimeSettingsStore, agentId: string, logger: RuntimeLogger, now = new Date()): Promise<string[]> {
  try {
    const seen = lastStarts(await settings.getSetting(STORE_AGENTS_SETTING));
    const active = Object.fromEntries(Object.entries(seen).filter(([, at]) => now.getTime() - Date.parse(at) < ACTIVE_MS));
    const others = Object.keys(active).filter((id) => id !== agentId).sort();
    const own = seen[agentId];
    if (own === undefined || now.getTime() - Date.parse(own) >= REFRESH_MS) {
      await settings.putSetting(STORE_AGENTS_SETTING, { ...active, [agentId]: now.toISOString() }, { actor: `host:${agentId}`, reason: `agent ${agentId} started on this state store` });
    }
    if (others.length > 0) {
      logger.warn(
        { event: "state.shared_store", agentId, otherAgents: others, sharedFacets: [...SHARED_FACETS] },
        `agents ${others.join(", ")} also use this state store: their runs, replies, history, schedules and kill switch stay apart, but /memory and /files are one for all of them; give each agent its own store (a PostgreSQL schema of its own: the postgres adapter's schema option)`,
      );
    }
    return others;
  } catch (error) {
    logger.warn({ event: "state.shared_store_check_failed", err: String(error) }, "noting this agent on the state store failed; whether other agents share it is unknown");
    return [];
  }
}

/** The stored note's entries that are agent ids with a valid time; anything else is left out. */
function lastStarts(stored: JsonValue | undefined): Record<string, string> {
  if (typeof stored !== "object" || stored === null || Array.isArray(stored)) return {};
  return Object.fromEntries(Object.entries(stored).filter((entry): entry is [string, string] => typeof entry[1] === "string" && Number.isFinite(Date.parse(entry[1]))));
}
