/**
 * agent.ts `dynamicConnections.grants`: which of the host's grants a run-added
 * connection may use, and the hosts each may be sent to. Without it a run could
 * name any stored grant with a baseUrl on any allowed host, and every call
 * would carry that secret there.
 */

/** Whether `host` is one of `patterns` ("api.example.com", or "*.example.com" for its subdomains). */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const name = normaliseHost(host);
  return patterns.some((pattern) => {
    const wanted = normaliseHost(pattern);
    return wanted === name || (wanted.startsWith("*.") && name.endsWith(wanted.slice(1)));
  });
}

/** A host pattern is allowed by `allowedHosts` when every host it matches is: "*.api.example.com" by "*.example.com" too. */
function patternAllowed(pattern: string, allowedHosts: readonly string[]): boolean {
  const wanted = normaliseHost(pattern);
  if (!wanted.startsWith("*.")) return hostMatches(wanted, allowedHosts);
  return allowedHosts.some((allowed) => {
    const entry = normaliseHost(allowed);
    return entry === wanted || (entry.startsWith("*.") && wanted.endsWith(entry.slice(1)));
  });
}

function normaliseHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
}

/**
 * What is wrong with `grants` (as "dynamicConnections.<problem>"), or undefined:
 * an object of grant id -> a non-empty list of host names, each one that
 * `allowedHosts` allows too (a grant bound to a host the guard refuses could
 * never be used, and says the agent author meant something else).
 */
export function grantBindingsProblem(grants: unknown, allowedHosts: readonly string[]): { problem: string; fix: string } | undefined {
  const example = 'Write grants: { "github": ["api.github.com"] }: each grant id a run may use, with the hosts its secret may be sent to.';
  if (typeof grants !== "object" || grants === null || Array.isArray(grants)) return { problem: `grants must be an object, not ${JSON.stringify(grants)}`, fix: example };
  for (const [grant, hosts] of Object.entries(grants)) {
    const where = `grants[${JSON.stringify(grant)}]`;
    if (grant.trim() === "") return { problem: "grants has an empty grant id", fix: example };
    if (!Array.isArray(hosts) || hosts.length === 0 || hosts.some((host) => typeof host !== "string" || host.trim() === "" || /[/:\s]/.test(host.replace(/^\[.*\]$/, "")))) {
      return { problem: `${where} must be a non-empty list of host names (no scheme, port or path)`, fix: example };
    }
    const outside = (hosts as string[]).find((host) => !patternAllowed(host, allowedHosts));
    if (outside !== undefined) {
      return {
        problem: `${where} names ${outside}, which dynamicConnections.allowedHosts does not allow`,
        fix: `List ${outside} in dynamicConnections.allowedHosts too, or drop it from ${where}.`,
      };
    }
  }
  return undefined;
}
