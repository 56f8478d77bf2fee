import { AssemblyLineError } from "./errors.js";

/** Binary object storage (local files, S3, R2). */
export interface BlobStore {
  /**
   * Store `body` under `key`. `contentType` must be header text (see blobContentType);
   * left out, empty or blank it is `application/octet-stream`, and surrounding spaces are dropped.
   */
  put(key: string, body: Uint8Array, options?: { contentType?: string }): Promise<{ key: string; size: number }>;
  /** undefined when the key does not exist. */
  get(key: string): Promise<{ body: Uint8Array; contentType: string } | undefined>;
  delete(key: string): Promise<void>;
  list(prefix?: string): Promise<string[]>;
}

/** The content type a BlobStore gives back for a blob put without one. */
export const DEFAULT_BLOB_CONTENT_TYPE = "application/octet-stream";
/** Longer is no media type; S3 would refuse the request headers long before the body. */
const MAX_CONTENT_TYPE_LENGTH = 1024;
/** Printable ASCII, space and tab: what every HTTP stack sends and gives back unchanged. */
const HEADER_TEXT = /^[\t\x20-\x7e]*$/;
/** The spaces HTTP drops around a header value. */
const SURROUNDING_SPACE = /^[ \t]+|[ \t]+$/g;

/**
 * The content type a BlobStore stores for `put(key, body, { contentType })`, the
 * same in every store: undefined, "" or blank is DEFAULT_BLOB_CONTENT_TYPE, and
 * surrounding spaces and tabs are dropped (HTTP drops them). Anything that is not
 * a string of header text (printable ASCII, at most 1024 characters) is refused
 * with AL_ERR_STATE_INPUT_INVALID, before anything is stored.
 */
export function blobContentType(key: string, contentType: unknown): string {
  if (contentType === undefined) return DEFAULT_BLOB_CONTENT_TYPE;
  const refuse = (reason: string): never => {
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `blob "${key}": contentType ${shown(contentType)} ${reason}`, {
      fix: 'Pass contentType as a MIME type in printable ASCII, e.g. "text/plain; charset=utf-8", or leave it out. Keep a file name in the key, not in a content-type parameter (percent-encode it if it must be there: name*=UTF-8\'\'%E5%A0%B1.txt).',
      details: { key, contentType: typeof contentType === "string" ? contentType : String(contentType) },
    });
  };
  if (typeof contentType !== "string") return refuse("is not a string");
  const trimmed = contentType.replace(SURROUNDING_SPACE, "");
  if (trimmed === "") return DEFAULT_BLOB_CONTENT_TYPE;
  if (!HEADER_TEXT.test(trimmed)) return refuse("is not header text: it holds a line break, a control character or a character outside ASCII");
  if (trimmed.length > MAX_CONTENT_TYPE_LENGTH) return refuse(`is ${trimmed.length} characters long, over the ${MAX_CONTENT_TYPE_LENGTH} a blob store takes`);
  return trimmed;
}

/**
 * The bytes `put(key, body)` stores, the same in every store: those a typed array,
 * DataView or Buffer holds in memory, as a Uint8Array view of them (not a copy;
 * a store copies before it waits). Anything else (a string, an ArrayBuffer, an
 * array, null) is refused with AL_ERR_STATE_INPUT_INVALID, before anything is stored.
 */
export function blobBodyBytes(key: string, body: unknown): Uint8Array {
  if (!ArrayBuffer.isView(body)) {
    const kind = body === null ? "null" : typeof body === "object" ? `a ${body.constructor?.name ?? "object"}` : `a ${typeof body}`;
    throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `blob "${key}": body is ${kind}, not bytes`, {
      fix: "Pass the body as a Uint8Array (or a Buffer): new TextEncoder().encode(text) for a string, new Uint8Array(arrayBuffer) for an ArrayBuffer.",
      details: { key },
    });
  }
  return body instanceof Uint8Array ? body : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * A content type from outside (a channel, a download's Content-Type header) made
 * fit for a BlobStore: itself without surrounding spaces when it is header text;
 * else what comes before its parameters or a line break (`text/plain; name="報告.txt"`
 * gives `text/plain`) when that is; else undefined, for the caller's fallback.
 */
export function cleanBlobContentType(contentType: unknown): string | undefined {
  if (typeof contentType !== "string") return undefined;
  for (const candidate of [contentType, contentType.split(/[;\r\n]/)[0]!]) {
    const trimmed = candidate.replace(SURROUNDING_SPACE, "");
    if (trimmed !== "" && HEADER_TEXT.test(trimmed) && trimmed.length <= MAX_CONTENT_TYPE_LENGTH) return trimmed;
  }
  return undefined;
}

function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
  return value === null ? "null" : `${typeof value} ${String(value)}`.slice(0, 80);
}
