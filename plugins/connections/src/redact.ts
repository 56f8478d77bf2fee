import { secretRedaction, type ConnectionAuth, type SecretRedaction } from "@assemblyline-agents/core";
import type { GrantStore } from "./grants.js";

/**
 * A connection's secrets, with the words that replace them wherever a service
 * echoed one back (a debug endpoint returning the request's headers, an error
 * page quoting them, a tool description): tool results and errors reach the
 * model, events, logs and the settings store, where a secret must never be.
 * The forms looked for are core's (`secretForms`); this file says which
 * secrets a connection has and what marks them.
 */

/**
 * The redaction for `auth`: the grant's secret as the store holds it now, and each secret `sent`
 * (what the requests carried: a grant rotated while a call was in flight echoes the old one).
 * Undefined without auth or any secret.
 */
export async function redactionFor(auth: ConnectionAuth | undefined, grants: GrantStore | undefined, sent: Iterable<string> = []): Promise<SecretRedaction | undefined> {
  if (!auth) return undefined;
  const current = grants ? await grants.get(auth.grant).catch(() => undefined) : undefined;
  return grantRedaction(auth, [...(current ? [current] : []), ...sent]);
}

/** The redaction of `secrets`, each a value of `auth`'s grant. */
export function grantRedaction(auth: ConnectionAuth | undefined, secrets: Iterable<string>): SecretRedaction | undefined {
  // A grant's value is a secret whatever its length.
  return auth ? secretRedaction([...secrets].map((secret) => ({ secret, mark: `[grant ${auth.grant}]` })), { minLength: 1 }) : undefined;
}

/**
 * The values a host gives a stdio MCP server through `env`: that is where its credentials go (it has
 * no HTTP request to carry a grant), so a server quoting one must not put it in a result or an error.
 * Values shorter than 4 characters are left alone: "1", "on", "dev" occur in any text.
 */
export function envRedaction(env: Record<string, string> | undefined): SecretRedaction | undefined {
  return secretRedaction(Object.entries(env ?? {}).map(([name, value]) => ({ secret: value, mark: `[env ${name}]` })));
}
