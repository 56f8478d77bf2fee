import { redactSecrets, redactUrlQueries } from "@assemblyline-agents/core";
import type { Api, Model } from "@mariozechner/pi-ai";

/**
 * Parts of a header value looked for on their own (a token after its scheme, a
 * Basic password) are skipped below this length: a short part ("dev", "admin")
 * is likelier a word of the provider's message than what leaked. Whole values
 * keep core's own minimum.
 */
const MIN_CREDENTIAL_PART_LENGTH = 8;

/** `<scheme> <credentials>` of an Authorization-style value (RFC 9110 auth-scheme is a token). */
const AUTH_SCHEME_VALUE = /^\s*([A-Za-z][\w!#$%&'*+.^`|~-]*)\s+(\S.*?)\s*$/;

/**
 * The secrets one model call sends: the API key, the configured header values,
 * and the query values and password of its base URL (`?api-key=...` of Azure
 * and some gateways). Core's redaction looks for each in its encoded forms too.
 */
export function callSecrets(model: Model<Api>, apiKey: string | undefined): string[] {
  const values = [apiKey, ...Object.values(model.headers ?? {}).flatMap(headerSecrets)];
  try {
    const url = new URL(model.baseUrl);
    values.push(url.password, decodeSafely(url.password), url.search.slice(1));
    for (const [, value] of url.searchParams) values.push(value);
  } catch {
    // A base URL that does not parse is refused elsewhere; its text may still be echoed.
    values.push(model.baseUrl.split("?")[1]);
  }
  return values.filter((value): value is string => typeof value === "string");
}

/**
 * A header value and the credentials inside it: a gateway may echo only the
 * token of `Bearer <token>`, or the `user:password` (or the password) it
 * decoded from `Basic <base64>`.
 */
function headerSecrets(value: string): string[] {
  const match = AUTH_SCHEME_VALUE.exec(value);
  if (!match) return [value];
  const [, scheme, credentials] = match as unknown as [string, string, string];
  const secrets = [value];
  if (credentials.length >= MIN_CREDENTIAL_PART_LENGTH) secrets.push(credentials);
  const decoded = scheme.toLowerCase() === "basic" ? decodeBasicCredentials(credentials) : undefined;
  if (decoded) {
    // The whole user:password is a credential like the header value, under core's minimum only.
    secrets.push(decoded.userPassword);
    if (decoded.password.length >= MIN_CREDENTIAL_PART_LENGTH) secrets.push(decoded.password);
  }
  return secrets;
}

/** `user:password` from Basic credentials, or undefined when they are not base64 of such text. */
function decodeBasicCredentials(credentials: string): { userPassword: string; password: string } | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(credentials)) return undefined;
  const bytes = Buffer.from(credentials, "base64");
  const userPassword = bytes.toString("utf8");
  // Not base64 of UTF-8 text: decoding it would yield replacement characters or drop bits.
  if (Buffer.from(userPassword, "utf8").toString("base64").replace(/=+$/, "") !== credentials.replace(/=+$/, "")) return undefined;
  const colon = userPassword.indexOf(":");
  if (colon < 0) return undefined;
  return { userPassword, password: userPassword.slice(colon + 1) };
}

/**
 * A provider's message as it may be shown (run error, `model.failed`, logs,
 * failure deliveries): gateways echo the presented key or the request URL, so
 * the call's secrets are replaced and every URL loses its query string.
 */
export function redactCallSecrets(message: string, secrets: readonly string[]): string {
  return redactUrlQueries(redactSecrets(message, secrets));
}

function decodeSafely(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
