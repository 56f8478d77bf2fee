import { CAPTURE_BODY_LIMITS, urlCredentials, type CaptureContent, type JsonValue } from "@assemblyline-agents/core";
import { headOf } from "../text-cut.js";

/** Words that make a name secret-looking: a key, a header, a variable, a query parameter. */
const SECRET_WORDS = "authorization|api[-_]?key|apikey|passw(?:or)?d|token|cookie|secret|credential|private[-_]?key";
/** Keys whose values are withheld from every sink, whatever the capture mode. */
const SECRET_KEY = new RegExp(SECRET_WORDS, "i");
/** Free-text credentials that carry no key: `Bearer abc...`, `Basic abc...`, in any case (HTTP schemes are case-insensitive: `bearer abc...`). */
const SCHEME_CREDENTIAL = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
/**
 * The name and separator of a named value in text: `OPENAI_API_KEY=`, `"password": `, `\"token\":`.
 * Bounded name parts, and a name that starts where a word does, keep this linear on long unbroken text (base64, minified code).
 */
const SECRET_NAME_AND_SEPARATOR = `(?<![\\w.-])([\\w.-]{0,64}(?:${SECRET_WORDS})[\\w.-]{0,64})(\\\\*["']?\\s*[:=]\\s*)`;
/**
 * A secret-looking name given a value in text: `OPENAI_API_KEY=sk-...`, `?access_token=...`,
 * `x-api-key: ...`, `"password": "..."` (JSON inside prose, which does not parse as a whole),
 * `\"password\": \"...\"` (JSON held in a JSON string, its quotes escaped, inside prose).
 * The value is a quoted string (an escaped one ends at its first quote) or runs to a space,
 * quote or separator; an auth scheme before it (`Authorization: Token abc`) is kept and the
 * credential after it withheld.
 */
const NAMED_SECRET = new RegExp(
  `${SECRET_NAME_AND_SEPARATOR}((?:bearer|basic|token|digest|bot|apikey|key)\\s+)?(?!\\[REDACTED\\])(?![{\\[])("(?:[^"\\\\\\n]|\\\\.)*"?|'(?:[^'\\\\\\n]|\\\\.)*'?|\\\\+"[^"\\n]*"?|(?:[^\\s"'\\\\,;&#}\\]]|\\\\(?!["']))+)`,
  "gi",
);
/**
 * A secret-looking name given an object or an array in text: `"credentials": {"user": …}`,
 * `secrets=[…]`. The regex finds where the value starts; `valueEnd` finds where it ends.
 */
const NAMED_SECRET_CONTAINER = new RegExp(`${SECRET_NAME_AND_SEPARATOR}(?=[{\\[])`, "gi");
/** A URL in text, to its first space, quote or angle bracket; its credentials are what precedes its last `@` (see urlCredentials). */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s"'<>]+/gi;
export const REDACTED = "[REDACTED]";

/** True when a mode lets message bodies and tool input/output reach sinks. */
export function capturesBodies(mode: CaptureContent): mode is "content" | "full" {
  return mode === "content" || mode === "full";
}

/**
 * A body as a sink may see it: secret-looking keys redacted (also inside strings
 * that hold JSON), then serialized and cut to the mode's limit. Redaction comes
 * first so that cutting can never leave a secret behind in unparsed text.
 */
export function captureBody(value: unknown, mode: "content" | "full"): string {
  const redacted = redact(value);
  const text = typeof redacted === "string" ? redacted : JSON.stringify(redacted ?? null);
  return truncate(text, CAPTURE_BODY_LIMITS[mode]);
}

/**
 * Messages and instructions in the GenAI conventions' JSON form (`[{ role, parts:
 * [{ type, content }] }]`): redacted like any body, then each part's `content`
 * cut to the mode's limit, so the attribute stays JSON a backend can show as a
 * conversation (a body cut as a whole would end mid-JSON).
 */
export function captureMessages(messages: unknown[], mode: "content" | "full"): string {
  return JSON.stringify(cutContents(redact(messages), CAPTURE_BODY_LIMITS[mode]));
}

function cutContents(value: unknown, limit: number): unknown {
  if (Array.isArray(value)) return value.map((item) => cutContents(item, limit));
  if (typeof value !== "object" || value === null) return value;
  const cut: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key !== "content") cut[key] = cutContents(item, limit);
    else cut[key] = truncate(typeof item === "string" ? item : JSON.stringify(item ?? null), limit);
  }
  return cut;
}

export function redact(value: unknown, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (typeof value === "string") return redactString(value, depth);
  if (Array.isArray(value)) {
    // A header list's pair, `["x-api-key", "..."]`: the name says what the value is.
    if (value.length === 2 && typeof value[0] === "string" && SECRET_KEY.test(value[0])) return [value[0], REDACTED];
    return value.map((item) => redact(item, depth + 1));
  }
  if (typeof value === "object" && value !== null) {
    const named = secretNamed(value as Record<string, unknown>);
    const clean: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) clean[key] = SECRET_KEY.test(key) || (named && key === "value") ? REDACTED : redact(item, depth + 1);
    return clean;
  }
  return value;
}

/** `{ name: "Authorization", value: "..." }` (fetch's, HAR's and most SDKs' header entries): a value named secret by its sibling. */
function secretNamed(entry: Record<string, unknown>): boolean {
  if (!("value" in entry)) return false;
  return ["name", "key", "header"].some((field) => typeof entry[field] === "string" && SECRET_KEY.test(entry[field]));
}

function redactString(text: string, depth: number): string {
  const trimmed = text.trim();
  if ((trimmed.startsWith("{") && trimmed.endsWith("}")) || (trimmed.startsWith("[") && trimmed.endsWith("]"))) {
    try {
      return JSON.stringify(redact(JSON.parse(trimmed) as JsonValue, depth + 1));
    } catch {
      // Not JSON after all: treated as free text below.
    }
  }
  return withoutSecretContainers(text.replace(URL_IN_TEXT, withoutCredentials))
    .replace(NAMED_SECRET, (_match, name: string, separator: string, authScheme: string | undefined, secret: string) => {
      const quote = /^\\*["']/.exec(secret)?.[0] ?? "";
      return `${name}${separator}${authScheme ?? ""}${quote}${REDACTED}${quote}`;
    })
    .replace(SCHEME_CREDENTIAL, (_match, scheme: string) => `${scheme} ${REDACTED}`);
}

/** A URL with what precedes its last `@` withheld: `postgres://app:p@ss/w0rd@db` is `postgres://[REDACTED]@db`. */
function withoutCredentials(url: string): string {
  const { scheme, credentials, rest } = urlCredentials(url);
  return credentials === undefined ? url : `${scheme}${REDACTED}@${rest}`;
}

/**
 * Text with each object or array given to a secret-looking name withheld whole, to its
 * closing bracket (`"credentials": {"pin": "4321"}` is `"credentials": "[REDACTED]"`).
 * Each character is read once: the search goes on after the value it withheld.
 */
function withoutSecretContainers(text: string): string {
  let kept = "";
  let from = 0;
  NAMED_SECRET_CONTAINER.lastIndex = 0;
  for (let match = NAMED_SECRET_CONTAINER.exec(text); match; match = NAMED_SECRET_CONTAINER.exec(text)) {
    const start = match.index + match[0].length;
    const end = valueEnd(text, start);
    // The key's closing quote (`"`, or `\"` in escaped JSON) quotes the mark, so JSON stays JSON.
    const quote = /^\\*["']/.exec(match[2] ?? "")?.[0] ?? "";
    kept += `${text.slice(from, start)}${quote}${REDACTED}${quote}`;
    from = end;
    NAMED_SECRET_CONTAINER.lastIndex = end;
  }
  return kept + text.slice(from);
}

/**
 * Where the object or array starting at `start` ends: after its matching bracket,
 * brackets inside strings not counted; the text's end when it never closes (a cut
 * body), so nothing of it is left behind.
 */
function valueEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let at = start; at < text.length; at += 1) {
    const char = text[at];
    if (char === "\\") at += 1;
    else if (char === '"') inString = !inString;
    // A JSON string holds no line break: a stray quote in prose does not hide the rest of the value.
    else if (inString) inString = char !== "\n";
    else if (char === "{" || char === "[") depth += 1;
    else if ((char === "}" || char === "]") && --depth === 0) return at + 1;
  }
  return text.length;
}

export function truncate(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return `${headOf(text, limit)}…[truncated ${text.length - limit} chars]`;
}
