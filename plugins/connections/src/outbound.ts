import { AssemblyLineError, createGuardedFetch, type ConnectionAuth, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import type { GrantStore } from "./grants.js";

export interface OutboundOptions {
  grants: GrantStore | undefined;
  /** A DNS resolver for the address guard (tests, split-horizon DNS); default the system's. */
  resolve?: OutboundResolver;
}

/**
 * The fetch every request of one connection goes through: the one outbound
 * address guard (allowedHosts on every hop, the connected address classified,
 * redirects re-checked), plus the connection's credentials read from the grant
 * store at request time. The guard drops them on a redirect to another origin.
 */
export function connectionFetch(connection: string, policy: ConnectionPolicy, auth: ConnectionAuth | undefined, options: OutboundOptions): typeof fetch {
  const guarded = createGuardedFetch({ allowedHosts: policy.allowedHosts, onlyAllowedHosts: policy.onlyAllowedHosts, ...(options.resolve ? { resolve: options.resolve } : {}) });
  if (!auth) return guarded;
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const secret = await grantSecret(connection, auth, options.grants);
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (auth.header) headers.set(auth.header, secret);
    else headers.set("authorization", `Bearer ${secret}`);
    return guarded(input, { ...init, headers });
  }) as typeof fetch;
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
