import { AssemblyLineError, isAssemblyLineError } from "../errors.js";
import { checkMaxRedirects, OutboundHostRules, type OutboundPolicy } from "./outbound-policy.js";

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * A `fetch` that only reaches what `policy` allows: http(s) URLs, hosts the
 * policy admits (`allowedHosts` with `onlyAllowedHosts`, and `withinHosts`), and public addresses (special ones only through hosts listed by
 * name), checked on the connected address. Redirects are followed here, hop by
 * hop, each re-checked; the caller's headers and `originBoundQuery` parameters go
 * only to the first URL's origin, and only to `credentialHosts` when it is set,
 * nor does a copy of their values a service wrote into a redirect's URL (see withoutBound).
 * Refusals reject with AL_ERR_OUTBOUND_ADDRESS_REFUSED, AL_ERR_OUTBOUND_HOST_REFUSED
 * or AL_ERR_OUTBOUND_REDIRECT.
 */
export function createGuardedFetch(policy: OutboundPolicy = {}): typeof fetch {
  const rules = new OutboundHostRules(policy);
  const maxRedirects = checkMaxRedirects(policy);
  // undici loads on first use, so importing the SDK stays cheap for code that never fetches.
  let client: Promise<{ fetch: typeof import("undici").fetch; dispatcher: import("undici").Agent }> | undefined;
  const connect = () =>
    (client ??= Promise.all([import("undici"), import("./guarded-agent.js")]).then(([undici, agent]) => ({ fetch: undici.fetch, dispatcher: agent.createGuardedAgent(rules, policy.resolve) })));

  const guarded = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const request = await requestParts(input, init);
    const first = checkUrl(rules, request.url);
    const origin = first.origin;
    if (!rules.mayCarryCredentials(first.hostname)) {
      throw new AssemblyLineError("AL_ERR_OUTBOUND_HOST_REFUSED", `host ${first.hostname} is not in the policy's credentialHosts, and the request carries credentials; it was not sent`, {
        fix: `Add ${first.hostname} to credentialHosts if the credentials may go there; else request a host they are bound to.`,
        details: { host: first.hostname, list: "credentialHosts" },
      });
    }
    let url = request.url;
    let method = request.method;
    let body = request.body;
    let headers = new Headers(request.headers);
    // Dropped with the headers at the first hop to another origin, never sent there or after.
    let bound: Bound[] | undefined = originBound(new URL(request.url), policy.originBoundQuery);
    const { fetch: undiciFetch, dispatcher } = await connect();
    for (let hop = 0; ; hop += 1) {
      let response: Response;
      try {
        response = (await undiciFetch(url, { method, headers: [...headers], body, signal: init.signal, redirect: "manual", dispatcher } as unknown as Parameters<typeof undiciFetch>[1])) as unknown as Response;
      } catch (error) {
        throw refusalIn(error) ?? error;
      }
      const location = response.headers.get("location");
      if (!REDIRECT_STATUSES.has(response.status) || !location || init.redirect === "manual") return response;
      await response.body?.cancel();
      if (init.redirect === "error") {
        throw new AssemblyLineError("AL_ERR_OUTBOUND_REDIRECT", `${new URL(url).origin} redirected with ${response.status} and the request said redirect: "error"`, { fix: "Request the final URL, or allow redirects." });
      }
      if (hop >= maxRedirects) {
        throw new AssemblyLineError("AL_ERR_OUTBOUND_REDIRECT", `more than ${maxRedirects} redirects, starting at ${new URL(request.url).origin}`, { fix: "Request the final URL, or raise the policy's maxRedirects." });
      }
      const next = checkUrl(rules, new URL(location, url).toString());
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        if (method !== "HEAD") method = "GET";
        body = undefined;
        headers.delete("content-type");
        headers.delete("content-length");
      } else if (body instanceof ReadableStream) {
        throw new AssemblyLineError("AL_ERR_OUTBOUND_REDIRECT", `${response.status} redirect of a streamed request body, which cannot be sent twice`, { fix: "Send the body as a string or bytes, or request the final URL." });
      }
      // Credentials the caller set belong to the origin it named (and only where credentialHosts lets them go), never to a redirect target elsewhere.
      if (next.origin !== origin || !rules.mayCarryCredentials(next.hostname)) {
        // Any header may be a secret (auth.header names its own): its value is not let through in the URL either.
        const held = [...(bound ?? []), ...headerValues(headers)];
        if (held.length > 0) withoutBound(new URL(url).origin, next, held);
        headers = new Headers();
        bound = undefined;
      } else if (bound) {
        for (const { name, value } of bound) next.searchParams.set(name, value);
      }
      url = next.toString();
    }
  };
  return guarded as typeof fetch;
}

function checkUrl(rules: OutboundHostRules, text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_HOST_REFUSED", `${JSON.stringify(text)} is not an absolute URL`, { fix: "Pass an absolute http(s) URL." });
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_HOST_REFUSED", `${url.protocol} URLs are not fetched`, { fix: "Use an http(s) URL." });
  }
  if (!rules.allows(url.hostname)) {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_HOST_REFUSED", `host ${url.hostname} is not in the policy's allowedHosts`, {
      fix: `Add ${url.hostname} to allowedHosts if requests should reach it.`,
      details: { host: url.hostname, list: "allowedHosts" },
    });
  }
  if (!rules.isWithin(url.hostname)) {
    throw new AssemblyLineError("AL_ERR_OUTBOUND_HOST_REFUSED", `host ${url.hostname} is not in the policy's withinHosts`, {
      fix: `Add ${url.hostname} to withinHosts if requests should reach it.`,
      details: { host: url.hostname, list: "withinHosts" },
    });
  }
  return url;
}

/** A value that stays with the origin it was sent to: an origin-bound query parameter's, or one of the caller's headers'. */
interface Bound {
  in: "query" | "header";
  name: string;
  value: string;
}

/** The values `url` holds for the origin-bound parameters `names`. */
function originBound(url: URL, names: readonly string[] | undefined): Bound[] | undefined {
  const held = (names ?? []).flatMap((name) => url.searchParams.getAll(name).map((value): Bound => ({ in: "query", name, value })));
  return held.length > 0 ? held : undefined;
}

/**
 * Headers that say what the request is and accepts, never who sends it: their values (application/json, gzip)
 * are not looked for in a redirect's URL. Every other header's value is, whatever its name, as a secret may be
 * sent in a header of any name (x-api-key, private-token).
 */
const DESCRIPTIVE_HEADERS = new Set(["accept", "accept-charset", "accept-encoding", "accept-language", "cache-control", "content-encoding", "content-language", "content-length", "content-type", "mcp-protocol-version", "pragma", "user-agent"]);

/** A header value shorter than this is no secret worth the name, and would be found by chance in most URLs (an event id, a flag): it is not looked for. */
const MIN_HEADER_SECRET_LENGTH = 8;

/**
 * The values of `headers` a redirect's URL must not carry elsewhere: each one's whole value, and for
 * `Authorization` (`Bearer <token>`, `Basic <base64>`) the credentials after the scheme, and a Basic
 * one's decoded `user:password` and password; for `Cookie`, each cookie's value.
 */
function headerValues(headers: Headers): Bound[] {
  const held: Bound[] = [];
  for (const [name, value] of headers) {
    if (DESCRIPTIVE_HEADERS.has(name)) continue;
    const values = new Set([value.trim()]);
    if (name === "authorization" || name === "proxy-authorization") {
      const [scheme, credentials] = value.trim().split(/\s+/, 2);
      if (credentials !== undefined) values.add(credentials);
      if (credentials !== undefined && scheme!.toLowerCase() === "basic") {
        const decoded = Buffer.from(credentials, "base64").toString("utf8");
        values.add(decoded);
        if (decoded.includes(":")) values.add(decoded.slice(decoded.indexOf(":") + 1));
      }
    } else if (name === "cookie") {
      for (const pair of value.split(";")) if (pair.includes("=")) values.add(pair.slice(pair.indexOf("=") + 1).trim());
    }
    for (const secret of values) if (secret.length >= MIN_HEADER_SECRET_LENGTH) held.push({ in: "header", name, value: secret });
  }
  return held;
}

/**
 * `next`, a redirect to another origin, without the origin-bound parameters (by name) and without
 * any of the `bound` values (an origin-bound parameter's, a header's) wherever the service copied
 * one, whole or inside a longer value (an SSO bounce sends `?return_to=<the original URL, key and
 * all>`, or `?token=<the x-api-key it was sent>`), verbatim or encoded (decodings). Such a query
 * parameter, or fragment, is dropped; a value copied into the rest of the URL (its path, host or
 * userinfo) cannot be taken out, so the redirect is refused. `from` is the origin that redirected.
 */
function withoutBound(from: string, next: URL, bound: Bound[]): void {
  const names = new Set(bound.filter((held) => held.in === "query").map(({ name }) => name));
  const holding = (text: string) => {
    const forms = decodings(text);
    return bound.filter(({ value }) => forms.some((form) => form.includes(value)));
  };
  const holdsValue = (text: string) => holding(text).length > 0;
  const where = holdsValue(next.pathname) ? "path" : [next.username, next.password].some(holdsValue) ? "userinfo" : holdsValue(next.hostname) ? "host name" : undefined;
  if (where !== undefined) {
    // The target's host is named only when the value is not in it; the values' owners are named, never the values.
    const target = holdsValue(next.hostname) ? "another origin" : `${next.protocol}//${next.host}`;
    const found = [next.pathname, next.username, next.password, next.hostname].flatMap(holding);
    const owners = (kind: Bound["in"]) => [...new Set(found.filter((held) => held.in === kind).map(({ name }) => name))];
    const [parameters, headers] = [owners("query"), owners("header")];
    const whose = [...(parameters.length ? [`${parameters.join(", ")} parameter`] : []), ...(headers.length ? [`${headers.join(", ")} header`] : [])].join(" and ");
    throw new AssemblyLineError("AL_ERR_OUTBOUND_REDIRECT", `${from} redirected to ${target} with the value of its ${whose} in the new URL's ${where}, so the redirect was not followed: that value stays with ${from}`, {
      fix: headers.length ? `Request the final URL directly.` : `Request the final URL directly, or send the value to ${from} in a header if the service accepts one.`,
      details: { from, parameters, headers },
    });
  }
  // Kept as the service wrote them, but for the parameters that carry a value of the origin.
  const kept = next.search.slice(1).split("&").filter((pair) => {
    if (pair === "") return false;
    const name = [...new URLSearchParams(pair).keys()][0];
    return !(name !== undefined && names.has(name)) && !holdsValue(pair);
  });
  next.search = kept.length > 0 ? `?${kept.join("&")}` : "";
  if (holdsValue(next.hash)) next.hash = "";
}

/** Rounds of decoding tried on a URL part: a value copied into a URL inside a URL is encoded once more per level. */
const DECODE_ROUNDS = 4;

/**
 * `text` and what it decodes to, each result decoded again up to DECODE_ROUNDS times, by
 * percent-decoding, and by taking `+` as a space first (a form's encoding): the forms in which a
 * copied value may be found.
 */
function decodings(text: string): string[] {
  const forms = new Set([text]);
  let round = [text];
  for (let depth = 0; depth < DECODE_ROUNDS && round.length > 0; depth += 1) {
    const decoded = round.flatMap((form) => [percentDecoded(form), percentDecoded(form.replaceAll("+", " "))]).filter((form) => !forms.has(form));
    for (const form of decoded) forms.add(form);
    round = [...new Set(decoded)];
  }
  return [...forms];
}

/** `text` with each run of %XX escapes decoded as UTF-8 (an escape that is not one is left as it is; bytes that are no UTF-8 become U+FFFD). */
function percentDecoded(text: string): string {
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => Buffer.from(run.slice(1).split("%").map((hex) => Number.parseInt(hex, 16))).toString("utf8"));
}

async function requestParts(input: string | URL | Request, init: RequestInit): Promise<{ url: string; method: string; headers: RequestInit["headers"]; body: RequestInit["body"] }> {
  if (typeof input === "string" || input instanceof URL) {
    return { url: input.toString(), method: (init.method ?? "GET").toUpperCase(), headers: init.headers, body: init.body };
  }
  const method = (init.method ?? input.method).toUpperCase();
  const body = init.body !== undefined ? init.body : method === "GET" || method === "HEAD" ? undefined : await input.arrayBuffer();
  return { url: input.url, method, headers: init.headers ?? input.headers, body };
}

/** undici wraps connect failures as TypeError("fetch failed", { cause }); surface our refusal instead. */
function refusalIn(error: unknown, depth = 0): AssemblyLineError | undefined {
  if (depth > 4 || typeof error !== "object" || error === null) return undefined;
  if (isAssemblyLineError(error)) return error;
  for (const inner of [(error as { cause?: unknown }).cause, ...((error as { errors?: unknown[] }).errors ?? [])]) {
    const found = refusalIn(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}
