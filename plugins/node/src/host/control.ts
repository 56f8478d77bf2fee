import { HttpError, optionalString, parseJsonObject, readBody, refuseUnknownFields, sendJson, STATE_OUTAGE_RETRY_AFTER_S } from "./http.js";
import type { IngressKillSwitch } from "./kill-switch.js";
import type { ConversationMailbox } from "./mailbox.js";
import type { Route } from "./router.js";

/** The ingress kill switch endpoints: read it with its audit trail, flip it. */
export function killSwitchRoutes(killSwitch: IngressKillSwitch, maxBodyBytes: number): Route[] {
  return [
    {
      method: "GET",
      pattern: "/admin/kill-switch",
      auth: "admin",
      async handle(ctx) {
        sendJson(ctx.res, 200, { ...(await killSwitch.state()), audit: await killSwitch.history() });
      },
    },
    {
      method: "POST",
      pattern: "/admin/kill-switch",
      auth: "admin",
      async handle(ctx) {
        const body = parseJsonObject(ctx.req, await readBody(ctx.req, maxBodyBytes));
        // A misspelt reason or actor would otherwise be dropped, and the audit trail say "http" and nothing.
        refuseUnknownFields(body, ["engaged", "reason", "actor"], '{"engaged": true, "reason": "provider incident", "actor": "alice"}');
        if (typeof body.engaged !== "boolean") {
          throw new HttpError(400, "AL_ERR_HTTP_BODY_INVALID", "body.engaged must be true or false", { fix: '{"engaged": true, "reason": "provider incident"}' });
        }
        const reason = optionalString(body, "reason");
        const actor = optionalString(body, "actor") ?? "http";
        const { state, audit } = await killSwitch.set(body.engaged, { actor, ...(reason ? { reason } : {}) });
        sendJson(ctx.res, 200, { ...state, auditEvent: audit });
      },
    },
  ];
}

/** Liveness and readiness. Readiness turns 503 first thing at shutdown, so balancers stop routing here. */
export function probeRoutes(status: { draining(): boolean; mailbox: ConversationMailbox; killSwitch: IngressKillSwitch; stateReachable(): Promise<boolean> }): Route[] {
  return [
    {
      method: "GET",
      pattern: "/healthz",
      auth: "probe",
      async handle(ctx) {
        sendJson(ctx.res, 200, { status: "ok" });
      },
    },
    {
      method: "GET",
      pattern: "/readyz",
      auth: "probe",
      async handle(ctx) {
        if (status.draining()) {
          sendJson(ctx.res, 503, { status: "draining" }, { "retry-after": String(STATE_OUTAGE_RETRY_AFTER_S) });
          return;
        }
        // Not ready while the state store is unreachable: nothing could be accepted durably.
        if (!(await status.stateReachable())) {
          sendJson(ctx.res, 503, { status: "state_unavailable" }, { "retry-after": String(STATE_OUTAGE_RETRY_AFTER_S) });
          return;
        }
        sendJson(ctx.res, 200, { status: "ready", ...status.mailbox.load, ingressKillSwitch: await status.killSwitch.engaged() });
      },
    },
  ];
}
