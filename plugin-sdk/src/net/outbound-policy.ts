import { AssemblyLineError } from "../errors.js";

/**
 * One address a resolver gives, as `dns.lookup` does. Declared here rather than imported from
 * `node:dns`, so core's types compile for a user without `@types/node`.
 */
export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

/** A DNS resolver shaped like `dns.lookup` with `{ all: true }`; tests and split-horizon setups pass their own. */
export type OutboundResolver = (hostname: string, options: { family?: number; hints?: number }) => Promise<readonly ResolvedAddress[]>;

/**
 * What an outbound request made on the runtime's behalf (attachment downloads,
 * connections) may reach. Every hop is checked: the URL (scheme, host), the
 * address the socket actually connects to, and each redirect target.
 */
export interface OutboundPolicy {
  /**
   * Hosts named here ("files.internal", "10.0.0.5", "[::1]") may reach special
   * addresses (loopback, private, link-local, ...). Entries of the form
   * "*.example.com" match subdomains and only count for `onlyAllowedHosts`.
   */
  allowedHosts?: readonly string[];
  /** Refuse every host that `allowedHosts` does not match (with an empty list: every host). Default false. */
  onlyAllowedHosts?: boolean;
  /**
   * A further list every hop's host must match (exact, or "*.example.com" for subdomains),
   * whatever `allowedHosts` admits: it only narrows, so a host listed here alone reaches no
   * special address. E.g. the hosts a channel says its attachment downloads come from.
   */
  withinHosts?: readonly string[];
  /**
   * Query parameters that belong to the origin a request names, as the caller's headers do (a key
   * sent as `?api_key=`): on a redirect to another origin they are taken out of the next URL, and so
   * is any parameter (or the fragment) whose value holds one of their values, verbatim or encoded
   * once or more (`?return_to=<the original URL>`); a redirect with such a value in its path, host or
   * userinfo is refused (AL_ERR_OUTBOUND_REDIRECT). On a redirect within the origin they are set
   * again as the request had them.
   */
  originBoundQuery?: readonly string[];
  /**
   * The hosts the request's credentials (the caller's headers and `originBoundQuery` parameters)
   * may be sent to (exact, or "*.example.com" for subdomains); absent: any host the policy allows.
   * Checked on every hop: a first URL outside it is refused before anything is sent
   * (AL_ERR_OUTBOUND_HOST_REFUSED), a redirect to a host outside it carries none of them, as a
   * redirect to another origin does not. Set it only for requests that carry a credential, such as
   * a grant bound to the hosts it may go to.
   */
  credentialHosts?: readonly string[];
  /** Redirects followed before AL_ERR_OUTBOUND_REDIRECT. Default 3; 0 follows none. */
  maxRedirects?: number;
  /** Resolve host names; default `dns.lookup`. The guard checks whatever it returns. */
  resolve?: OutboundResolver;
}

export const DEFAULT_MAX_REDIRECTS = 3;

/** The policy's host rules, normalised once: lower case, no IPv6 brackets. */
export class OutboundHostRules {
  private readonly allowed: HostList;
  private readonly within: HostList | undefined;
  private readonly credentials: HostList | undefined;

  constructor(private readonly policy: OutboundPolicy) {
    this.allowed = hostList(policy.allowedHosts ?? [], "allowedHosts");
    this.within = policy.withinHosts === undefined ? undefined : hostList(policy.withinHosts, "withinHosts");
    this.credentials = policy.credentialHosts === undefined ? undefined : hostList(policy.credentialHosts, "credentialHosts");
  }

  /** Matched by credentialHosts (always true without it): a request there may carry the caller's credentials. */
  mayCarryCredentials(hostname: string): boolean {
    return this.credentials === undefined || matches(this.credentials, hostname);
  }

  /** Listed by exact name in allowedHosts: may reach special addresses. */
  mayReachSpecial(hostname: string): boolean {
    return this.allowed.exact.has(normaliseHost(hostname));
  }

  /** Allowed by the policy's host list (always true without onlyAllowedHosts). */
  allows(hostname: string): boolean {
    return !this.policy.onlyAllowedHosts || matches(this.allowed, hostname);
  }

  /** Matched by withinHosts (always true without it). */
  isWithin(hostname: string): boolean {
    return this.within === undefined || matches(this.within, hostname);
  }
}

interface HostList {
  exact: ReadonlySet<string>;
  suffixes: readonly string[];
}

function hostList(hosts: readonly string[], option: string): HostList {
  if (!Array.isArray(hosts)) {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_POLICY", `${option} is ${JSON.stringify(hosts)}, not a list of host names`, { fix: 'List host names such as ["files.example.com", "*.example.com"].' });
  }
  const normalised = hosts.map((host: unknown) => {
    if (typeof host !== "string" || host.trim() === "") {
      throw new AssemblyLineError("AL_ERR_OUTBOUND_POLICY", `${option} holds ${JSON.stringify(host)}, not a host name`, { fix: 'List host names such as "files.example.com" or "*.example.com".' });
    }
    return normaliseHost(host);
  });
  return { exact: new Set(normalised.filter((host) => !host.startsWith("*."))), suffixes: normalised.filter((host) => host.startsWith("*.")).map((host) => host.slice(1)) };
}

function matches(list: HostList, hostname: string): boolean {
  const host = normaliseHost(hostname);
  return list.exact.has(host) || list.suffixes.some((suffix) => host.endsWith(suffix));
}

export function normaliseHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
}

export function checkMaxRedirects(policy: OutboundPolicy): number {
  const max = policy.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  if (!Number.isInteger(max) || max < 0) {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_POLICY", `maxRedirects is ${JSON.stringify(policy.maxRedirects)}, not a whole number >= 0`, { fix: "Pass maxRedirects: 0 to follow none, or a small count such as 3." });
  }
  return max;
}
