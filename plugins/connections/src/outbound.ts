import { AssemblyLineError, createGuardedFetch, DEFAULT_MAX_REDIRECTS, type ConnectionAuth, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import type { GrantStore } from "./grants.js";

export interface OutboundOptions {
  grants: GrantStore | undefined;
  /** A DNS resolver for the address guard (tests, split-horizon DNS); default the system's. */
  resolve?: OutboundResolver;
}

/** The one outbound address guard for a connection's policy: allowedHosts on every hop, the connected address classified, redirects re-checked. */
export function guardedFetchFor(policy: ConnectionPolicy, options: OutboundOptions): typeof fetch {
  return createGuardedFetch({ allowedHosts: policy.allowedHosts, onlyAllowedHosts: policy.onlyAllowedHosts, ...(options.resolve ? { resolve: options.resolve } : {}) });
}

/**
 * The fetch every request of one connection goes through: the guard, plus the
 * connection's credentials read from the grant store at request time. A
 * redirect to another origin drops them (the guard a header, sendWithQuerySecret
 * a query parameter). Each secret attached is
 * added to `sent`, so what a service echoes can be redacted even after the
 * grant was rotated.
 */
export function connectionFetch(connection: string, policy: ConnectionPolicy, auth: ConnectionAuth | undefined, options: OutboundOptions, sent?: SentSecrets): typeof fetch {
  return withGrant(connection, policy, auth, options.grants, guardedFetchFor(policy, options), sent);
}

/** `guarded` with the connection's credentials on each request (see connectionFetch). */
export function withGrant(connection: string, policy: ConnectionPolicy, auth: ConnectionAuth | undefined, grants: GrantStore | undefined, guarded: typeof fetch, sent?: SentSecrets): typeof fetch {
  if (!auth) return guarded;
  const attached = async (input: string | URL | Request, init: RequestInit = {}, hops = 0): Promise<Response> => {
    // Checked on the URL about to be sent (an OpenAPI document's server, a transport's endpoint), before the secret is read.
    refuseUnboundHost(connection, policy, auth, input instanceof Request ? input.url : input.toString());
    const secret = await grantSecret(connection, auth, grants);
    sent?.add(secret);
    if (auth.query !== undefined) return sendWithQuerySecret(input, init, auth.query, secret, guarded, (next, nextInit) => attached(next, nextInit, hops + 1), hops);
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (auth.header) headers.set(auth.header, secret);
    else headers.set("authorization", `Bearer ${secret}`);
    return guarded(input, { ...init, headers });
  };
  return ((input: string | URL | Request, init?: RequestInit) => attached(input, init)) as typeof fetch;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Send with the secret as the `parameter` query parameter. The guard drops the
 * caller's headers on a redirect to another origin, but it follows the
 * Location the service names, and a service that keeps the query string on a
 * redirect (`return 301 https://new.example$request_uri`) would send the secret
 * along. So this hop is sent with redirect "manual" and followed here: on the
 * same origin through `again` (binding checked and the secret attached anew,
 * as the guard keeps headers there), elsewhere without the secret under any
 * name and without the caller's headers, the guard following the rest.
 */
async function sendWithQuerySecret(
  input: string | URL | Request,
  init: RequestInit,
  parameter: string,
  secret: string,
  guarded: typeof fetch,
  again: (next: URL, init: RequestInit) => Promise<Response>,
  hops: number,
): Promise<Response> {
  if (input instanceof Request) {
    const method = (init.method ?? input.method).toUpperCase();
    const body = init.body !== undefined ? init.body : method === "GET" || method === "HEAD" ? undefined : await input.arrayBuffer();
    return sendWithQuerySecret(input.url, { signal: input.signal, ...init, method, headers: init.headers ?? input.headers, body }, parameter, secret, guarded, again, hops);
  }
  const url = new URL(input.toString());
  url.searchParams.set(parameter, secret);
  const follow = init.redirect === undefined || init.redirect === "follow";
  const response = await guarded(url, { ...init, redirect: follow ? "manual" : init.redirect });
  const location = response.headers.get("location");
  if (!follow || !REDIRECT_STATUSES.has(response.status) || !location) return response;
  await response.body?.cancel();
  if (hops >= DEFAULT_MAX_REDIRECTS) {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_REDIRECT", `more than ${DEFAULT_MAX_REDIRECTS} redirects, the last from ${url.origin}`, { fix: "Give the connection the final URL." });
  }
  const next = new URL(location, url);
  // What the service put in the Location is taken out by name and by value: the secret is attached again only where it belongs.
  next.searchParams.delete(parameter);
  for (const [name, value] of [...next.searchParams]) if (value === secret) next.searchParams.delete(name);
  let method = (init.method ?? "GET").toUpperCase();
  let body = init.body;
  const headers = new Headers(init.headers);
  // As the guard (and browsers) do: 303, and 301/302 after a POST, become a GET without a body.
  if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
    if (method !== "HEAD") method = "GET";
    body = undefined;
    headers.delete("content-type");
    headers.delete("content-length");
  } else if (body instanceof ReadableStream) {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_REDIRECT", `${response.status} redirect of a streamed request body, which cannot be sent twice`, { fix: "Send the body as a string or bytes, or give the connection the final URL." });
  }
  const nextInit: RequestInit = { ...init, method, ...(body === undefined ? { body: null } : { body }) };
  if (next.origin === url.origin) return again(next, { ...nextInit, headers });
  const { headers: _dropped, ...elsewhere } = nextInit;
  return guarded(next, elsewhere);
}

/** The secrets a connection's requests were sent with, most recent last; only the last few are kept (a grant rotated often would grow it for ever). */
export class SentSecrets {
  private readonly secrets = new Set<string>();

  constructor(private readonly keep = 4) {}

  add(secret: string): void {
    this.secrets.delete(secret);
    this.secrets.add(secret);
    for (const oldest of this.secrets) {
      if (this.secrets.size <= this.keep) break;
      this.secrets.delete(oldest);
    }
  }

  addAll(other: SentSecrets): void {
    for (const secret of other.secrets) this.add(secret);
  }

  values(): string[] {
    return [...this.secrets];
  }
}

/**
 * A run's connection may send its grant only to the hosts agent.ts dynamicConnections.grants binds it
 * to (policy.grantHosts): the request fails, unsent, rather than carry the secret anywhere else.
 */
function refuseUnboundHost(connection: string, policy: ConnectionPolicy, auth: ConnectionAuth, url: string): void {
  if (policy.grantHosts === undefined) return;
  const host = URL.canParse(url) ? new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase() : url;
  const bound = policy.grantHosts.some((pattern) => {
    const wanted = pattern.toLowerCase().replace(/^\[|\]$/g, "");
    return wanted === host || (wanted.startsWith("*.") && host.endsWith(wanted.slice(1)));
  });
  if (bound) return;
  throw new AssemblyLineError(
    "AL_ERR_CONNECTION_REFUSED",
    `connection "${connection}" would send grant "${auth.grant}" to ${host}, but agent.ts dynamicConnections.grants lets it go only to ${policy.grantHosts.length ? policy.grantHosts.join(", ") : "no host"}; the request was not sent`,
    { fix: `List ${host} under dynamicConnections.grants[${JSON.stringify(auth.grant)}] (and allowedHosts) if that grant may go there; else give the connection a baseUrl on one of the hosts it may go to.` },
  );
}

async function grantSecret(connection: string, auth: ConnectionAuth, grants: GrantStore | undefined): Promise<string> {
  const secret = grants ? await grants.get(auth.grant) : undefined;
  if (secret === undefined) {
    throw new AssemblyLineError("AL_ERR_GRANT_MISSING", `connection "${connection}" uses grant "${auth.grant}", which the host's grant store does not hold`, {
      fix: grants ? `Store it: grants.put("${auth.grant}", secret).` : "Pass grants: new EncryptedGrantStore({ path }) to createConnections and store the grant.",
    });
  }
  return secret;
}
