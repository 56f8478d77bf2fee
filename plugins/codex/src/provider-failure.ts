import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { AssemblyLineError, REDACTED_MARK, redactSecrets } from "@assemblyline-agents/core";

/**
 * Codex's own retries, bounded. At its defaults one model call that keeps
 * failing is 5 HTTP attempts (`request_max_retries` 4) for each of 6 stream
 * attempts (`stream_max_retries` 5): 30 requests. Bounded here to 3 x 2.
 */
export const CODEX_REQUEST_MAX_RETRIES = 2;
export const CODEX_STREAM_MAX_RETRIES = 1;

/** Providers built into Codex: it refuses any override of their settings, so their retries stay Codex's. */
const BUILT_IN_PROVIDERS = new Set(["openai", "ollama", "lmstudio", "oss"]);

const MIN_SECRET_LENGTH = 8;
/** Token shapes a provider may echo even when the exact key is unknown here (a key in the login session). */
const TOKEN_SHAPES = [/\bsk-[A-Za-z0-9_-]{8,}/g, /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi];
const URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>,]+/gi;

/**
 * `thread/start` config bounding the active provider's retries, unless the
 * user's config already sets them (CODEX_HOME/config.toml or `config`).
 */
export function retryOverrides(effective: Record<string, unknown>): Record<string, number> {
  const id = typeof effective.model_provider === "string" ? effective.model_provider : "openai";
  if (BUILT_IN_PROVIDERS.has(id)) return {};
  const providers = (effective.model_providers ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const own = providers[id] ?? {};
  const overrides: Record<string, number> = {};
  if (own.request_max_retries == null) overrides[`model_providers.${id}.request_max_retries`] = CODEX_REQUEST_MAX_RETRIES;
  if (own.stream_max_retries == null) overrides[`model_providers.${id}.stream_max_retries`] = CODEX_STREAM_MAX_RETRIES;
  return overrides;
}

/**
 * A Codex turn that ended without completing, as the run's error. Codex's
 * message can carry the provider's URL and whatever the provider echoed (the
 * key it was sent), so both are taken out; the fix follows the HTTP status
 * when the message names one.
 */
export function providerFailure(turnStatus: string | undefined, message: string | undefined, env: Record<string, string | undefined>): AssemblyLineError {
  const text = redactProviderMessage(message ?? "no error message", env);
  const status = statusIn(text);
  return new AssemblyLineError("AL_ERR_MODEL_PROVIDER", `the Codex turn ended ${turnStatus ?? "without a status"}: ${text}`, {
    fix: fixFor(status),
    details: { status: status ?? null },
  });
}

function fixFor(status: number | undefined): string {
  if (status === 401 || status === 403) return "Check the Codex login (`npx codex login status`) and the permissions of the account or key it holds.";
  if (status === 404) return "Check the model name (openai-codex/<model>) and the provider's base_url in CODEX_HOME/config.toml.";
  if (status === 429 || (status !== undefined && status >= 500)) return "The provider is failing or rate limiting, and Codex's retries are spent; try the run again later.";
  return "The provider refused the request; its message above says why (often the model name, the context length or the Codex login).";
}

/** Codex reports a provider's answer as "unexpected status 503 Service Unavailable: ...". */
function statusIn(text: string): number | undefined {
  const match = /\bstatus:? (\d{3})\b/i.exec(text);
  return match ? Number(match[1]) : undefined;
}

/**
 * Codex's message about a provider's failure, fit for a log or an error: without
 * the provider's URL or any key it may echo (the environment's, the login
 * session's, or anything shaped like a key).
 */
export function redactProviderMessage(message: string, env: Record<string, string | undefined>): string {
  let text = redactSecrets(message, knownSecrets(env), { minLength: MIN_SECRET_LENGTH });
  for (const shape of TOKEN_SHAPES) text = text.replace(shape, REDACTED_MARK);
  return text.replace(URL, "[provider URL]");
}

/** The keys Codex may have sent: from its environment and from the login session in CODEX_HOME/auth.json. */
function knownSecrets(env: Record<string, string | undefined>): string[] {
  const values: unknown[] = [env.OPENAI_API_KEY, env.CODEX_API_KEY, env.CODEX_ACCESS_TOKEN];
  try {
    const auth = JSON.parse(readFileSync(join(env.CODEX_HOME ?? join(homedir(), ".codex"), "auth.json"), "utf8")) as { OPENAI_API_KEY?: unknown; tokens?: Record<string, unknown> };
    values.push(auth.OPENAI_API_KEY, ...Object.values(auth.tokens ?? {}));
  } catch {
    // No readable session file (a keyring login): the token shapes above still apply.
  }
  return values.filter((value): value is string => typeof value === "string");
}
