import type { Api, Model } from "@mariozechner/pi-ai";

const REDACTED = "[redacted]";
/** Shorter values are not searched for: they cannot be secret, and replacing them would garble the message. */
const MIN_SECRET_LENGTH = 4;
/** A URL's query string, up to where the URL ends in running text. */
const URL_QUERY = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#"'<>]*)\?[^\s#"'<>]*/gi;

/**
 * The secrets one model call sends: the API key, the configured header values,
 * and the query values and password of its base URL (`?api-key=...` of Azure
 * and some gateways).
 */
export function callSecrets(model: Model<Api>, apiKey: string | undefined): string[] {
  const values = [apiKey, ...Object.values(model.headers ?? {})];
  try {
    const url = new URL(model.baseUrl);
    values.push(url.password, decodeSafely(url.password), url.search.slice(1));
    for (const [, value] of url.searchParams) values.push(value, encodeURIComponent(value));
  } catch {
    // A base URL that does not parse is refused elsewhere; its text may still be echoed.
    values.push(model.baseUrl.split("?")[1]);
  }
  if (apiKey) values.push(encodeURIComponent(apiKey));
  const secrets = new Set(values.filter((value): value is string => typeof value === "string" && value.length >= MIN_SECRET_LENGTH));
  // Longest first, so a secret containing another is removed whole.
  return [...secrets].sort((a, b) => b.length - a.length);
}

/**
 * A provider's message as it may be shown (run error, `model.failed`, logs,
 * failure deliveries): gateways echo the presented key or the request URL, so
 * the call's secrets are replaced and every URL loses its query string.
 */
export function redactSecrets(message: string, secrets: readonly string[]): string {
  let text = message;
  for (const secret of secrets) text = text.split(secret).join(REDACTED);
  return text.replace(URL_QUERY, `$1?${REDACTED}`);
}

function decodeSafely(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
