import { redactSecrets, redactUrlQueries } from "@assemblyline-agents/core";
import type { Api, Model } from "@mariozechner/pi-ai";

/**
 * The secrets one model call sends: the API key, the configured header values,
 * and the query values and password of its base URL (`?api-key=...` of Azure
 * and some gateways). Core's redaction looks for each in its encoded forms too.
 */
export function callSecrets(model: Model<Api>, apiKey: string | undefined): string[] {
  const values = [apiKey, ...Object.values(model.headers ?? {})];
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
