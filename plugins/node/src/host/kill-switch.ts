import type { JsonValue, RuntimeLogger, RuntimeSettingsStore, SettingAuditEvent } from "@assemblyline-agents/core";

/** The settings key the ingress kill switch is stored under. */
export const KILL_SWITCH_SETTING = "ingress.killSwitch";

export interface KillSwitchState {
  engaged: boolean;
  /** Who flipped it last, when it was ever flipped. */
  actor: string | null;
  reason: string | null;
  changedAt: string | null;
}

/** Replicas re-read the setting this often, so a flip on one reaches all of them. */
const REFRESH_MS = 1_000;

/**
 * The ingress kill switch: while engaged, channels accept no new turns (503);
 * runs already accepted, resumes and approvals go on. It lives in the settings
 * facet, whose putSetting writes the value and its control-plane audit event
 * atomically, so with a durable facet it survives restarts and is shared by
 * every replica on that state.
 */
export class IngressKillSwitch {
  private cached: { state: KillSwitchState; at: number } | undefined;

  constructor(
    private readonly settings: RuntimeSettingsStore,
    private readonly logger: RuntimeLogger,
  ) {}

  async state(): Promise<KillSwitchState> {
    if (this.cached && Date.now() - this.cached.at < REFRESH_MS) return this.cached.state;
    const stored = await this.settings.getSetting(KILL_SWITCH_SETTING);
    const state = parseState(stored);
    this.cached = { state, at: Date.now() };
    return state;
  }

  /** The position while the last read is fresh, without waiting; undefined when it must be read (`engaged()`). */
  engagedIfFresh(): boolean | undefined {
    return this.cached && Date.now() - this.cached.at < REFRESH_MS ? this.cached.state.engaged : undefined;
  }

  async engaged(): Promise<boolean> {
    try {
      return (await this.state()).engaged;
    } catch (error) {
      // A settings outage keeps the last known position rather than flapping the ingress.
      this.logger.warn({ event: "kill_switch.read_failed", err: String(error) }, "reading the kill switch failed; keeping its last known position");
      return this.cached?.state.engaged ?? false;
    }
  }

  async set(engaged: boolean, audit: { actor: string; reason?: string }): Promise<{ state: KillSwitchState; audit: SettingAuditEvent }> {
    const changedAt = new Date().toISOString();
    const value = { engaged, actor: audit.actor, reason: audit.reason ?? null, changedAt };
    const event = await this.settings.putSetting(KILL_SWITCH_SETTING, value, audit);
    const state = parseState(value);
    this.cached = { state, at: Date.now() };
    this.logger.warn(
      { event: engaged ? "control.kill_switch_engaged" : "control.kill_switch_released", actor: audit.actor, reason: audit.reason ?? null, auditId: event.id },
      engaged ? "ingress kill switch engaged: channels refuse new turns" : "ingress kill switch released: channels accept turns again",
    );
    return { state, audit: event };
  }

  history(limit = 20): Promise<SettingAuditEvent[]> {
    return this.settings.listSettingAudit({ key: KILL_SWITCH_SETTING, limit });
  }
}

function parseState(stored: JsonValue | undefined): KillSwitchState {
  if (typeof stored === "object" && stored !== null && !Array.isArray(stored)) {
    const text = (value: JsonValue | undefined) => (typeof value === "string" ? value : null);
    return { engaged: stored.engaged === true, actor: text(stored.actor), reason: text(stored.reason), changedAt: text(stored.changedAt) };
  }
  return { engaged: stored === true, actor: null, reason: null, changedAt: null };
}
