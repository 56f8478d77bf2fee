import { createHash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";
import { HttpError } from "./http.js";

/** Which kind of route a request reached, for auth policies. */
export type RouteKind = "channel" | "runs" | "admin" | "probe";

/** What an auth policy sees of a request. */
export interface AuthRequest {
  kind: RouteKind;
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  /** The client's address: the socket's, or behind trusted proxies (`trustProxy`) the one they forwarded. */
  remoteAddress: string | undefined;
  /** The channel name, for raw channel routes. */
  channel?: string;
}

export interface HostAuthOptions {
  /**
   * Accepted `Authorization: Bearer <token>` value(s); several allow rotation.
   * Default: env ASSEMBLY_LINE_BEARER_TOKEN (comma-separated for several).
   */
  bearerToken?: string | string[];
  /**
   * A host auth policy, asked when the request carries no valid bearer token:
   * return true to let it through. Must not throw; return false instead.
   */
  authorize?(request: AuthRequest): boolean | Promise<boolean>;
  /**
   * Serve /healthz and /readyz without auth even when a token or policy is configured: they
   * carry no run data (up, ready or draining, load counts, the kill switch), and platform health
   * checks (fly.toml, railway.json, Kubernetes) send no header. `false` puts them behind the
   * host's auth. Default: env ASSEMBLY_LINE_PUBLIC_PROBES (`true`/`false`), else true.
   */
  publicProbes?: boolean;
}

/**
 * The host's auth gate. With a token or policy configured, protected routes
 * require it in every mode. Without one, production refuses (403) the routes
 * that expose or create runs, and dev mode serves them open.
 */
export class HostAuth {
  private readonly digests: Buffer[];
  private readonly authorize: HostAuthOptions["authorize"];
  private readonly publicProbes: boolean;

  constructor(
    options: HostAuthOptions | undefined,
    env: Record<string, string | undefined>,
    private readonly devMode: boolean,
    private readonly logger: RuntimeLogger,
  ) {
    checkAuthOptions(options);
    // An empty env variable is an unset one; an option, checked above, holds only tokens.
    const configured = options?.bearerToken ?? env.ASSEMBLY_LINE_BEARER_TOKEN?.split(",");
    const tokens = [configured ?? []].flat().map((token) => token.trim()).filter((token) => token !== "");
    // Compared as digests so the comparison is constant-time whatever the lengths.
    this.digests = tokens.map(digest);
    this.authorize = options?.authorize;
    this.publicProbes = options?.publicProbes ?? envFlag(env, "ASSEMBLY_LINE_PUBLIC_PROBES") ?? true;
  }

  /** true when a bearer token or an auth policy is configured. */
  get configured(): boolean {
    return this.digests.length > 0 || this.authorize !== undefined;
  }

  /** true when /healthz and /readyz are behind the host's auth (`publicProbes: false`). */
  get privateProbes(): boolean {
    return !this.publicProbes;
  }

  /** Resolve when the request may proceed; throw 401/403 otherwise. */
  async check(request: AuthRequest): Promise<void> {
    // Kept private (publicProbes: false), a probe is refused or let in as /runs is: in production with no
    // token or policy that is a 403, not an open probe; dev mode with none serves it as it serves /runs.
    if (request.kind === "probe" && this.publicProbes) return;
    // Decisions and kill-switch flips act on what a browser sends by itself (an open dev host, a policy
    // that trusts the caller's address or cookies): another site's page must not be able to send them.
    if ((request.kind === "runs" || request.kind === "admin") && !SAFE_METHODS.has(request.method) && crossSite(request.headers)) {
      this.logger.warn({ event: "security.cross_site_refused", method: request.method, path: request.path, remoteAddress: request.remoteAddress }, "request sent by another site's page refused");
      throw new HttpError(403, "AL_ERR_HOST_AUTH_REQUIRED", `${request.method} ${request.path} was sent by another site's page`, {
        fix: "Send it from the host's own pages (the run inspector), or from a client that is not a browser.",
      });
    }
    if (!this.configured) {
      if (this.devMode) {
        // Open only to pages addressed to this machine: a name another site controls (DNS rebinding)
        // would make its page same-origin with the host and let it read and decide every run.
        if (!loopbackAddressed(request.headers.host)) {
          this.logger.warn({ event: "security.foreign_host_refused", method: request.method, path: request.path, remoteAddress: request.remoteAddress }, "dev mode: request addressed to a name other than localhost refused");
          throw new HttpError(403, "AL_ERR_HOST_AUTH_REQUIRED", `${request.method} ${request.path} is open in dev mode only when addressed to localhost or an IP address`, {
            fix: "Open the host as http://127.0.0.1:<port>, or set ASSEMBLY_LINE_BEARER_TOKEN to reach it under another name.",
          });
        }
        return;
      }
      throw new HttpError(403, "AL_ERR_HOST_AUTH_REQUIRED", `${request.method} ${request.path} needs host auth in production, and none is configured`, {
        fix: "Set ASSEMBLY_LINE_BEARER_TOKEN (or listenNodeRuntime({ auth: { bearerToken } }) or an auth.authorize policy).",
      });
    }
    const presented = bearerOf(request.headers.authorization);
    if (presented !== undefined && this.matches(presented)) return;
    if (this.authorize) {
      let allowed = false;
      try {
        allowed = (await this.authorize(request)) === true;
      } catch (error) {
        this.logger.warn({ event: "security.auth_policy_failed", path: request.path, err: String(error) }, "auth policy threw; request refused");
      }
      if (allowed) return;
    }
    this.logger.warn(
      { event: "security.unauthorized", method: request.method, path: request.path, remoteAddress: request.remoteAddress, tokenPresented: presented !== undefined },
      "request refused: missing or wrong bearer token",
    );
    throw new HttpError(401, "AL_ERR_HTTP_UNAUTHORIZED", presented === undefined ? "no bearer token" : "the bearer token is not valid", {
      fix: "Send Authorization: Bearer <ASSEMBLY_LINE_BEARER_TOKEN>.",
      headers: { "www-authenticate": 'Bearer realm="assembly-line"' },
    });
  }

  /**
   * The fingerprint of the presented token when it is one of the configured tokens, for rate-limit keys
   * that must not hold the token itself. Any other token is undefined: a caller let in by a policy could
   * otherwise send a new made-up token with every request and never meet its limit.
   */
  verifiedFingerprint(headers: Record<string, string | undefined>): string | undefined {
    const token = bearerOf(headers.authorization);
    return token !== undefined && this.matches(token) ? digest(token).subarray(0, 8).toString("hex") : undefined;
  }

  private matches(token: string): boolean {
    const presented = digest(token);
    let found = false;
    for (const expected of this.digests) found = timingSafeEqual(presented, expected) || found;
    return found;
  }
}

const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

const AUTH_OPTIONS: readonly string[] = ["bearerToken", "authorize", "publicProbes"];

/**
 * Refuse auth options of the wrong shape before the host serves anything: taken as they come,
 * an empty bearerToken would override ASSEMBLY_LINE_BEARER_TOKEN and leave a dev host open, and
 * publicProbes "false" (a string) would keep the probes public. Messages never quote a token.
 */
function checkAuthOptions(options: unknown): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw authConfigError(`auth is ${kindOf(options)}, not an object`, 'Pass auth: { bearerToken: "<token>" }, or leave auth out to use ASSEMBLY_LINE_BEARER_TOKEN.');
  }
  for (const name of Object.keys(options)) {
    if (!AUTH_OPTIONS.includes(name)) throw authConfigError(`auth.${name} is not an auth option (auth takes ${AUTH_OPTIONS.join(", ")})`, `Remove auth.${name}, or correct its name.`);
  }
  const { bearerToken, authorize, publicProbes } = options as Record<string, unknown>;
  if (bearerToken !== undefined) {
    const unset = "or leave bearerToken out to use ASSEMBLY_LINE_BEARER_TOKEN (a variable that is unset or empty gives no token)";
    if (Array.isArray(bearerToken) && bearerToken.length === 0) throw authConfigError("auth.bearerToken is an empty list", `List at least one token, ${unset}.`);
    for (const [index, token] of (Array.isArray(bearerToken) ? bearerToken : [bearerToken]).entries()) {
      const field = Array.isArray(bearerToken) ? `auth.bearerToken[${index}]` : "auth.bearerToken";
      if (typeof token !== "string") throw authConfigError(`${field} is ${kindOf(token)}, not a string`, `Set it to the token callers send, ${unset}.`);
      if (token.trim() === "") throw authConfigError(`${field} is empty`, `Set it to the token callers send, ${unset}.`);
    }
  }
  if (authorize !== undefined && typeof authorize !== "function") {
    throw authConfigError(`auth.authorize is ${kindOf(authorize)}, not a function`, "Pass a function (request) => boolean, or leave authorize out.");
  }
  if (publicProbes !== undefined && typeof publicProbes !== "boolean") {
    const given = typeof publicProbes === "string" ? `the string ${JSON.stringify(publicProbes)}` : kindOf(publicProbes);
    throw authConfigError(`auth.publicProbes is ${given}, not true or false`, 'Write publicProbes: false (a boolean, not the string "false") to put /healthz and /readyz behind the host\'s auth, or leave it out.');
  }
}

/** What a value is, for messages: its type, and its text only where it cannot be a secret. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "boolean" || typeof value === "number") return `${typeof value} ${String(value)}`;
  return typeof value === "string" ? "a string" : typeof value === "object" ? "an object" : typeof value;
}

function authConfigError(what: string, fix: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_HOST_CONFIG", `listenNodeRuntime: ${what}`, { fix });
}

/** A yes/no env variable: undefined when unset or empty, refused when it is neither. */
function envFlag(env: Record<string, string | undefined>, name: string): boolean | undefined {
  const value = env[name]?.trim().toLowerCase();
  if (value === undefined || value === "") return undefined;
  if (value === "true" || value === "1") return true;
  if (value === "false" || value === "0") return false;
  throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${name}=${JSON.stringify(env[name])} is not true or false`, {
    fix: `Set ${name}=false to put /healthz and /readyz behind the host's auth, or leave it unset to serve them to anyone.`,
  });
}

/**
 * Whether a browser says another origin's page sent the request: Sec-Fetch-Site where the browser
 * sends it (every current one), else an Origin whose host is not the one addressed. Clients that are
 * not browsers send neither.
 */
function crossSite(headers: Record<string, string | undefined>): boolean {
  const site = headers["sec-fetch-site"];
  if (site !== undefined) return site !== "same-origin" && site !== "none";
  const origin = headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== (headers.host ?? "").toLowerCase();
  } catch {
    // "null" (a sandboxed frame, a file) or garbage: no page of this host.
    return true;
  }
}

/** A Host header naming localhost or an IP address: names no other site can point at this machine. */
function loopbackAddressed(host: string | undefined): boolean {
  if (host === undefined) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return true;
  // The URL parser has already normalized IPv4 (even 0x7f.1) and bracketed IPv6 literals.
  return isIP(hostname.replace(/^\[(.*)\]$/, "$1")) !== 0;
}

/**
 * The token of `Authorization: Bearer <token>`. A pattern rather than a parser library: auth-header
 * refuses every token outside RFC 6750's token68 (tokens such as p@ss:word that hosts have set and
 * clients send), http-auth-utils a scheme in lower case. What it yields is only ever compared, in
 * constant time, with the configured tokens.
 */
function bearerOf(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match ? match[1]!.trim() : undefined;
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}
