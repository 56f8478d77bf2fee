import type { ConnectionAuth, JsonValue } from "@assemblyline-agents/core";
import type { GrantStore } from "./grants.js";

/**
 * A connection's secrets, with the words that replace them wherever a service
 * echoed one back (a debug endpoint returning the request's headers, an error
 * page quoting them, a tool description): tool results and errors reach the
 * model, events, logs and the settings store, where a secret must never be.
 */
export interface Redaction {
  /** Every form (secretForms) of every secret, with its mark; longest first, so a shorter form never splits a longer one. */
  replacements: Array<{ form: string; mark: string }>;
}

/** The redaction of `secrets`, each replaced by its mark; undefined when there are none. */
export function redactionOf(secrets: Array<{ secret: string; mark: string }>): Redaction | undefined {
  const replacements = new Map<string, string>();
  for (const { secret, mark } of secrets) for (const form of secretForms(secret)) if (!replacements.has(form)) replacements.set(form, mark);
  if (replacements.size === 0) return undefined;
  return { replacements: [...replacements].map(([form, mark]) => ({ form, mark })).sort((a, b) => b.form.length - a.form.length) };
}

/** Both redactions at once (either may be undefined). */
export function combined(a: Redaction | undefined, b: Redaction | undefined): Redaction | undefined {
  if (!a || !b) return a ?? b;
  return { replacements: [...a.replacements, ...b.replacements].sort((x, y) => y.form.length - x.form.length) };
}

/** Encoded forms shorter than this are not looked for: a few base64 characters also occur by chance in any text. */
const MIN_ENCODED_LENGTH = 8;

const HTML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * The ways a service may quote a secret: verbatim, percent-encoded (a URL, a
 * form; upper- or lower-case hex; `/` left as it is, as Python's quote() does;
 * RFC 3986's reserved `!'()*` escaped too; twice over), JSON-escaped (with `\/`
 * as PHP writes it), HTML-escaped, hex, and base64 or base64url, also
 * inside a longer encoded value ("Basic " + base64("user:" + secret), a header
 * dump encoded whole). For the latter, each of the three byte alignments is
 * encoded and cut to the characters that depend on the secret's bytes alone,
 * so only the 1-3 characters it shares with its neighbours stay visible.
 * Longest first, so a shorter form never splits a longer one.
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, "utf8");
  const percent = encodeURIComponent(secret);
  const json = JSON.stringify(secret).slice(1, -1);
  const encoded = [
    percent,
    percent.replaceAll("%2F", "/"),
    percent.replace(/[!'()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`),
    encodeURIComponent(percent),
    new URLSearchParams({ s: secret }).toString().slice(2),
    json,
    json.replaceAll("/", "\\/"),
    secret.replace(/[&<>"']/g, (character) => HTML_ENTITIES[character]!),
    bytes.toString("hex"),
    bytes.toString("hex").toUpperCase(),
    bytes.toString("base64"),
    bytes.toString("base64url"),
  ];
  for (let shift = 0; shift < 3; shift += 1) {
    const total = shift + bytes.length;
    // Characters made partly of the bytes before the secret, and of those after it.
    const start = [0, 2, 3][shift]!;
    const end = Math.floor(total / 3) * 4 + [0, 1, 2][total % 3]!;
    const aligned = Buffer.concat([Buffer.alloc(shift), bytes]);
    encoded.push(aligned.toString("base64").slice(start, end), aligned.toString("base64url").slice(start, end));
  }
  const withLowerHex = encoded.flatMap((form) => [form, form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())]);
  const forms = new Set([secret, ...withLowerHex.filter((form) => form.length >= MIN_ENCODED_LENGTH)]);
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * The redaction for `auth`: the grant's secret as the store holds it now, and each secret `sent`
 * (what the requests carried: a grant rotated while a call was in flight echoes the old one).
 * Undefined without auth or any secret.
 */
export async function redactionFor(auth: ConnectionAuth | undefined, grants: GrantStore | undefined, sent: Iterable<string> = []): Promise<Redaction | undefined> {
  if (!auth) return undefined;
  const current = grants ? await grants.get(auth.grant).catch(() => undefined) : undefined;
  return grantRedaction(auth, [...(current ? [current] : []), ...sent]);
}

/** The redaction of `secrets`, each a value of `auth`'s grant. */
export function grantRedaction(auth: ConnectionAuth | undefined, secrets: Iterable<string>): Redaction | undefined {
  return auth ? redactionOf([...secrets].map((secret) => ({ secret, mark: `[grant ${auth.grant}]` }))) : undefined;
}

/** Values shorter than this that a stdio server gets through env are not redacted: "1", "on", "dev" occur in any text. */
const MIN_ENV_VALUE_LENGTH = 4;

/**
 * The values a host gives a stdio MCP server through `env`: that is where its credentials go (it has
 * no HTTP request to carry a grant), so a server quoting one must not put it in a result or an error.
 */
export function envRedaction(env: Record<string, string> | undefined): Redaction | undefined {
  return redactionOf(Object.entries(env ?? {}).filter(([, value]) => value.length >= MIN_ENV_VALUE_LENGTH).map(([name, value]) => ({ secret: value, mark: `[env ${name}]` })));
}

/** `text` with every form of every secret replaced by its mark. */
export function redactText(text: string, redaction: Redaction): string {
  let redacted = text;
  for (const { form, mark } of redaction.replacements) if (redacted.includes(form)) redacted = redacted.replaceAll(form, mark);
  return redacted;
}

export function redactValue<T>(value: T, redaction: Redaction | undefined): T {
  if (!redaction) return value;
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return redactText(item, redaction);
    if (Array.isArray(item)) return item.map(walk);
    if (typeof item === "object" && item !== null) return Object.fromEntries(Object.entries(item).map(([key, inner]) => [walk(key) as string, walk(inner)]));
    return item;
  };
  return walk(value) as T;
}

/** Redact an error's message and stack, and those of its causes, in place; returns it. */
export function redactError(error: unknown, redaction: Redaction | undefined): unknown {
  if (!redaction) return error;
  let current: unknown = error;
  for (let depth = 0; depth < 6 && typeof current === "object" && current !== null; depth += 1) {
    const inner = current as { message?: unknown; stack?: unknown; cause?: unknown };
    for (const field of ["message", "stack"] as const) {
      const text = inner[field];
      if (typeof text !== "string") continue;
      const redacted = redactText(text, redaction);
      if (redacted !== text) Object.defineProperty(current, field, { value: redacted, writable: true, configurable: true });
    }
    current = inner.cause;
  }
  return error;
}

export type { JsonValue };
