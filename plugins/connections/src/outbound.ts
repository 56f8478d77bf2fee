import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { AssemblyLineError, classifyAddress, createGuardedFetch, type ConnectionAuth, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import type { GrantStore } from "./grants.js";

export interface OutboundOptions {
  grants: GrantStore | undefined;
  /** A DNS resolver for the address guard (tests, split-horizon DNS); default the system's. */
  resolve?: OutboundResolver;
}

/**
 * The one outbound address guard for a connection's policy: allowedHosts on every hop, the
 * connected address classified, redirects re-checked; a secret sent as a query parameter
 * (`auth.query`) stays with the origin it was sent to, as a header does, and a run's grant goes
 * to no hop outside the hosts it is bound to (`grantHosts`, the guard's credentialHosts).
 */
export function guardedFetchFor(policy: ConnectionPolicy, options: OutboundOptions, auth?: ConnectionAuth): typeof fetch {
  return createGuardedFetch({
    allowedHosts: policy.allowedHosts,
    onlyAllowedHosts: policy.onlyAllowedHosts,
    ...(auth?.query !== undefined ? { originBoundQuery: [auth.query] } : {}),
    ...(auth !== undefined && policy.grantHosts !== undefined ? { credentialHosts: policy.grantHosts } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
}

/**
 * For a connection whose describe sends no request to the host its calls go to (kind http; an
 * OpenAPI one whose calls go elsewhere than its document): that host, resolved
 * now and each address classified as the guard classifies a call's, so a host that allowedHosts
 * admits only by a wildcard and that resolves to a private, loopback or link-local address is
 * refused when the connection is made, as an MCP or OpenAPI one is by its first request. A host
 * the policy lists by exact name may reach such addresses, as with the guard. Each call is still
 * checked on the address it connects to. A lookup that fails throws as it failed.
 */
export async function refuseSpecialAddresses(url: string, policy: ConnectionPolicy, options: OutboundOptions): Promise<void> {
  const host = hostOf(url);
  if (policy.allowedHosts.some((allowed) => hostOf(allowed) === host)) return;
  const addresses = isIP(host) ? [{ address: host }] : await (options.resolve ?? systemResolve)(host, {});
  if (addresses.length === 0) throw new AssemblyLineError("AL_ERR_OUTBOUND_ADDRESS_REFUSED", `host ${host} resolved to no address`, { fix: "Check the host name." });
  // Any special address among the answers refuses the host, as the guard does: a call may connect to any of them.
  for (const { address } of addresses) {
    const found = classifyAddress(address);
    if (found.public) continue;
    const range = found.embedded ? `${found.range} (${found.embedded.address}, ${found.embedded.range})` : found.range;
    throw new AssemblyLineError("AL_ERR_OUTBOUND_ADDRESS_REFUSED", `host ${host} is ${host === found.address ? "" : `resolved to ${found.address}, `}a ${range} address, which outbound requests may not reach`, {
      fix: `List ${host} in the policy's allowedHosts if it really is an internal service the runtime should reach.`,
      details: { hostname: host, address: found.address, range: found.range },
    });
  }
}

/** A URL's host name (or a bare host name) as the guard compares it: lower case, no IPv6 brackets, no trailing dot. */
function hostOf(text: string): string {
  const host = URL.canParse(text) ? new URL(text).hostname : text;
  return host.trim().toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
}

function systemResolve(hostname: string): Promise<ReadonlyArray<{ address: string }>> {
  return lookup(hostname, { all: true });
}

/**
 * The fetch every request of one connection goes through: the guard, plus the
 * connection's credentials read from the grant store at request time. The
 * guard drops them on a redirect to another origin. Each secret attached is
 * added to `sent`, so what a service echoes can be redacted even after the
 * grant was rotated.
 */
export function connectionFetch(connection: string, policy: ConnectionPolicy, auth: ConnectionAuth | undefined, options: OutboundOptions, sent?: SentSecrets): typeof fetch {
  return withGrant(connection, policy, auth, options.grants, guardedFetchFor(policy, options, auth), sent);
}

/** `guarded` (made by guardedFetchFor with the same `auth`) with the connection's credentials on each request (see connectionFetch). */
export function withGrant(connection: string, policy: ConnectionPolicy, auth: ConnectionAuth | undefined, grants: GrantStore | undefined, guarded: typeof fetch, sent?: SentSecrets): typeof fetch {
  if (!auth) return guarded;
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    // Checked on the URL about to be sent (an OpenAPI document's server, a transport's endpoint), before the secret is read.
    refuseUnboundHost(connection, policy, auth, input instanceof Request ? input.url : input.toString());
    const secret = await grantSecret(connection, auth, grants);
    sent?.add(secret);
    if (auth.query !== undefined) {
      const url = new URL(input instanceof Request ? input.url : input.toString());
      url.searchParams.set(auth.query, secret);
      return guarded(input instanceof Request ? new Request(url, input) : url, init);
    }
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (auth.header) headers.set(auth.header, secret);
    else headers.set("authorization", `Bearer ${secret}`);
    return guarded(input, { ...init, headers });
  }) as typeof fetch;
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
