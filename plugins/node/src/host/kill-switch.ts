import type { JsonValue, RuntimeLogger, RuntimeSettingsStore, SettingAuditEvent } from "@assemblyline-agents/core";
import { HttpError, STATE_OUTAGE_RETRY_AFTER_S } from "./http.js";

/**
 * The store-wide settings key versions before per-agent switches kept one ingress kill
 * switch under for every agent on a state store, and the prefix of each agent's key
 * (`killSwitchSetting`). It is still read, never written: see `IngressKillSwitch`.
 */
export const KILL_SWITCH_SETTING = "ingress.killSwitch";

/** The settings key an agent's ingress kill switch is stored under: `ingress.killSwitch:<agentId>`. */
export function killSwitchSetting(agentId: string): string {
  return `${KILL_SWITCH_SETTING}:${agentId}`;
}

export interface KillSwitchState {
  engaged: boolean;
  /** Who flipped it last, when it was ever flipped. */
  actor: string | null;
  reason: string | null;
  changedAt: string | null;
  /** The settings key the position comes from: the agent's own, or the store-wide `KILL_SWITCH_SETTING` while that holds a value and the agent's was never written. */
  key: string;
}

/** Replicas re-read the setting this often, so a flip on one reaches all of them. */
const REFRESH_MS = 1_000;

/**
 * An agent's ingress kill switch: while engaged, the agent's channels accept no
 * new turns (503); runs already accepted, resumes and approvals go on. It lives
 * in the settings facet under the agent's own key, whose putSetting writes the
 * value and its control-plane audit event atomically, so with a durable facet it
 * survives restarts and is shared by every replica of that agent, and agents
 * sharing one store keep their switches apart.
 *
 * Until the agent's key is first written, the store-wide key older versions wrote
 * decides, so a switch engaged before the upgrade stays engaged until an operator
 * releases it for this agent. Its audit events stay in this agent's history as far
 * as they decided it: those before the agent's first own event.
 */
export class IngressKillSwitch {
  private cached: { state: KillSwitchState; at: number } | undefined;
  private readonly key: string;

  constructor(
    private readonly settings: RuntimeSettingsStore,
    agentId: string,
    private readonly logger: RuntimeLogger,
  ) {
    this.key = killSwitchSetting(agentId);
  }

  async state(): Promise<KillSwitchState> {
    if (this.cached && Date.now() - this.cached.at < REFRESH_MS) return this.cached.state;
    const state = await this.read();
    this.cached = { state, at: Date.now() };
    return state;
  }

  /** The agent's own key once it was ever written, else the store-wide key while that holds a value. */
  private async read(): Promise<KillSwitchState> {
    const own = await this.settings.getSetting(this.key);
    if (own !== undefined) return parseState(own, this.key);
    const storeWide = await this.settings.getSetting(KILL_SWITCH_SETTING);
    return storeWide !== undefined ? parseState(storeWide, KILL_SWITCH_SETTING) : parseState(undefined, this.key);
  }

  /** The position while the last read is fresh, without waiting; undefined when it must be read (`engaged()`). */
  engagedIfFresh(): boolean | undefined {
    return this.cached && Date.now() - this.cached.at < REFRESH_MS ? this.cached.state.engaged : undefined;
  }

  /**
   * Whether the switch is engaged. A settings outage keeps the last known position rather than
   * flapping the ingress; before any read succeeded there is none, and the switch may be durably
   * engaged, so it throws a 503 (with Retry-After) rather than let turns in.
   */
  async engaged(): Promise<boolean> {
    try {
      return (await this.state()).engaged;
    } catch (error) {
      if (this.cached === undefined) {
        this.logger.warn({ event: "kill_switch.read_failed", err: String(error), known: false }, "reading the kill switch failed and it was never read; refusing new turns until it is");
        throw new HttpError(503, "AL_ERR_STATE_UNAVAILABLE", "the ingress kill switch cannot be read yet, so no new turns are accepted", {
          fix: `Retry after ${STATE_OUTAGE_RETRY_AFTER_S} s; operators: check the state store's settings facet (log event kill_switch.read_failed).`,
          headers: { "retry-after": String(STATE_OUTAGE_RETRY_AFTER_S) },
        });
      }
      this.logger.warn({ event: "kill_switch.read_failed", err: String(error), known: true }, "reading the kill switch failed; keeping its last known position");
      return this.cached.state.engaged;
    }
  }

  /** Flip this agent's switch: writes its own key (and from then on that key alone decides). */
  async set(engaged: boolean, audit: { actor: string; reason?: string }): Promise<{ state: KillSwitchState; audit: SettingAuditEvent }> {
    const changedAt = new Date().toISOString();
    const value = { engaged, actor: audit.actor, reason: audit.reason ?? null, changedAt };
    const event = await this.settings.putSetting(this.key, value, audit);
    const state = parseState(value, this.key);
    this.cached = { state, at: Date.now() };
    this.logger.warn(
      { event: engaged ? "control.kill_switch_engaged" : "control.kill_switch_released", actor: audit.actor, reason: audit.reason ?? null, auditId: event.id },
      engaged ? "ingress kill switch engaged: channels refuse new turns" : "ingress kill switch released: channels accept turns again",
    );
    return { state, audit: event };
  }

  /**
   * This agent's audit trail, newest first: its own key's events, and the store-wide
   * key's events written before the first of them (those decided this agent's switch;
   * later ones, from hosts of older versions, no longer do).
   */
  async history(limit = 20): Promise<SettingAuditEvent[]> {
    const [own, storeWide] = await Promise.all([
      this.settings.listSettingAudit({ key: this.key, limit }),
      this.settings.listSettingAudit({ key: KILL_SWITCH_SETTING, limit }),
    ]);
    // With `limit` own events listed, every store-wide event before the oldest listed sorts past the limit.
    const firstOwn = own.length > 0 ? Date.parse(own[own.length - 1]!.createdAt) : Infinity;
    const decided = storeWide.filter((event) => Date.parse(event.createdAt) < firstOwn);
    return [...own, ...decided].slice(0, limit);
  }
}

function parseState(stored: JsonValue | undefined, key: string): KillSwitchState {
  if (typeof stored === "object" && stored !== null && !Array.isArray(stored)) {
    const text = (value: JsonValue | undefined) => (typeof value === "string" ? value : null);
    return { engaged: stored.engaged === true, actor: text(stored.actor), reason: text(stored.reason), changedAt: text(stored.changedAt), key };
  }
  return { engaged: stored === true, actor: null, reason: null, changedAt: null, key };
}
