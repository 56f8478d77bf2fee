/**
 * Taking known secrets out of text a service sent back: a provider's error
 * quoting the API key it was sent, a debug endpoint echoing the request's
 * headers, an error page quoting a token. Such text reaches the model, events,
 * logs and failure deliveries, where a secret must never be. One helper for
 * every adapter, so each finds the same encodings of a secret.
 */

/** What replaces a secret when the caller names no mark of its own. */
export const REDACTED_MARK = "[redacted]";

/** A URL's query string, up to where the URL ends in running text. */
const URL_QUERY = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#"'<>]*)\?[^\s#"'<>]*/gi;

/** Secrets shorter than this are not looked for by default: "1", "on", "dev" occur in any text, and replacing them would garble it. */
const MIN_SECRET_LENGTH = 4;

/** Encoded forms shorter than this are not looked for: a few base64 characters also occur by chance in any text. */
const MIN_ENCODED_LENGTH = 8;

const HTML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Secrets with the marks that replace them, in every form a service may quote them. */
export interface SecretRedaction {
  /** Every form (secretForms) of every secret, with its mark; longest first, so a shorter form never splits a longer one. */
  readonly replacements: ReadonlyArray<{ readonly form: string; readonly mark: string }>;
}

export interface SecretRedactionOptions {
  /** Secrets shorter than this are left alone (default 4). */
  minLength?: number;
}

/**
 * The ways a service may quote a secret: verbatim, percent-encoded (a URL, a
 * form; upper- or lower-case hex; `/` left as it is, as Python's quote() does;
 * RFC 3986's reserved `!'()*` escaped too; twice over), JSON-escaped (with `\/`
 * as PHP writes it), HTML-escaped, hex, and base64 or base64url, also
 * inside a longer encoded value ("Basic " + base64("user:" + secret), a JSON
 * header dump encoded whole). For the latter, each of the three byte alignments is
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
    ...base64Forms(bytes),
    // A header dump encoded whole holds the secret as its JSON text has it.
    ...(json === secret ? [] : base64Forms(Buffer.from(json, "utf8"))),
  ];
  const withLowerHex = encoded.flatMap((form) => [form, form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())]);
  const forms = new Set([secret, ...withLowerHex.filter((form) => form.length >= MIN_ENCODED_LENGTH)]);
  return [...forms].sort((a, b) => b.length - a.length);
}

/** `bytes` in base64 and base64url, whole and at each of the three alignments inside a longer value. */
function base64Forms(bytes: Buffer): string[] {
  const forms = [bytes.toString("base64"), bytes.toString("base64url")];
  for (let shift = 0; shift < 3; shift += 1) {
    const total = shift + bytes.length;
    // Characters made partly of the bytes before the secret, and of those after it.
    const start = [0, 2, 3][shift]!;
    const end = Math.floor(total / 3) * 4 + [0, 1, 2][total % 3]!;
    const aligned = Buffer.concat([Buffer.alloc(shift), bytes]);
    forms.push(aligned.toString("base64").slice(start, end), aligned.toString("base64url").slice(start, end));
  }
  return forms;
}

/** The redaction of `secrets`, each replaced by its mark wherever any of its forms occurs; undefined when there are none. */
export function secretRedaction(secrets: Iterable<{ secret: string | null | undefined; mark: string }>, options: SecretRedactionOptions = {}): SecretRedaction | undefined {
  const minLength = options.minLength ?? MIN_SECRET_LENGTH;
  const replacements = new Map<string, string>();
  for (const { secret, mark } of secrets) {
    if (typeof secret !== "string" || secret.length < minLength) continue;
    for (const form of secretForms(secret)) if (!replacements.has(form)) replacements.set(form, mark);
  }
  if (replacements.size === 0) return undefined;
  return { replacements: [...replacements].map(([form, mark]) => ({ form, mark })).sort((a, b) => b.form.length - a.form.length) };
}

/** Both redactions at once (either may be undefined). */
export function combineRedactions(a: SecretRedaction | undefined, b: SecretRedaction | undefined): SecretRedaction | undefined {
  if (!a || !b) return a ?? b;
  return { replacements: [...a.replacements, ...b.replacements].sort((x, y) => y.form.length - x.form.length) };
}

/** `text` with every form of every secret replaced by its mark. */
export function redactText(text: string, redaction: SecretRedaction | undefined): string {
  if (!redaction) return text;
  let redacted = text;
  for (const { form, mark } of redaction.replacements) if (redacted.includes(form)) redacted = redacted.replaceAll(form, mark);
  return redacted;
}

/**
 * `text` with each of `secrets` (unset ones skipped) replaced by `[redacted]`
 * in every form a service may quote it: the one call for a provider's error
 * message.
 */
export function redactSecrets(text: string, secrets: Iterable<string | null | undefined>, options: SecretRedactionOptions = {}): string {
  return redactText(text, secretRedaction([...secrets].map((secret) => ({ secret, mark: REDACTED_MARK })), options));
}

/**
 * `text` with the query string of every URL in it replaced by `[redacted]`: a service
 * echoing a request URL quotes its `?api-key=...` (Azure, gateways), whose value the
 * caller may not know.
 */
export function redactUrlQueries(text: string): string {
  return text.replace(URL_QUERY, `$1?${REDACTED_MARK}`);
}

/** `value` with every string in it (keys too) redacted; a JSON-like value is walked, anything else kept as it is. */
export function redactValue<T>(value: T, redaction: SecretRedaction | undefined): T {
  if (!redaction) return value;
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return redactText(item, redaction);
    if (Array.isArray(item)) return item.map(walk);
    if (typeof item === "object" && item !== null) return Object.fromEntries(Object.entries(item).map(([key, inner]) => [walk(key) as string, walk(inner)]));
    return item;
  };
  return walk(value) as T;
}

/** Redacts an error's message and stack, and those of its causes (6 deep), in place; returns it. */
export function redactError<E>(error: E, redaction: SecretRedaction | undefined): E {
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
