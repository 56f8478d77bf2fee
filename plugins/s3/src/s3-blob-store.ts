import { Readable } from "node:stream";
import { AssemblyLineError, DEFAULT_BLOB_CONTENT_TYPE, blobBodyBytes, blobContentType, type BlobStore } from "@assemblyline-agents/core";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { refuseOwnClientOptions, refuseUnknownOptions, resolveS3Settings, resolveS3StoreSettings, type ResolvedS3Settings, type S3BlobOptions, type S3StoreSettings } from "./options.js";

/** S3's longest object key, in UTF-8 bytes (the prefix included). */
const MAX_KEY_BYTES = 1024;
/** With the u flag a surrogate pair is one code point, so this matches only a lone half. */
const LONE_SURROGATE = /\p{Surrogate}/u;
/**
 * C0 control characters. A NUL fails on the server; a CR cannot come back through a ListObjectsV2
 * XML listing a server writes it raw in (s3rver does; XML reads it as a LF), so list() would return a
 * key get and delete cannot reach. `EncodingType: "url"` does not help there: s3rver ignores it.
 */
const CONTROL_CHARACTER = /[\u0000-\u001f]/;
const CONTROL_NAMES: Record<string, string> = { "\0": "NUL", "\t": "tab", "\n": "line feed", "\r": "carriage return" };

export interface S3BlobStoreOptions extends S3BlobOptions {
  /**
   * A client to use instead of building one, as it was built: its endpoint, region, credentials and
   * timeouts. The options that would build the store's own (endpoint, region, forcePathStyle,
   * requestTimeoutMs, the key and endpoint variable lists) are refused beside it. The store never
   * destroys a client it was given.
   */
  client?: S3Client;
  /** What the `*Env` options read. Default: process.env. */
  env?: Record<string, string | undefined>;
}

/**
 * A BlobStore on any S3-compatible service: small objects in one PUT, large ones
 * (from `multipartThresholdBytes`) as a multipart upload, reads streamed.
 */
export class S3BlobStore implements BlobStore {
  /** With a client given, only the store's own settings: the client's endpoint, region, keys and timeouts apply. */
  readonly settings: S3StoreSettings & Partial<ResolvedS3Settings>;
  private readonly client: S3Client;
  private readonly ownsClient: boolean;

  constructor(options: S3BlobStoreOptions = {}) {
    refuseUnknownOptions(options, ["client", "env"]);
    const env = options.env ?? process.env;
    this.ownsClient = options.client === undefined;
    if (options.client === undefined) {
      const settings = resolveS3Settings(options, env);
      this.settings = settings;
      this.client = ownClient(settings);
    } else {
      refuseOwnClientOptions(options);
      this.settings = resolveS3StoreSettings(options, env);
      this.client = options.client;
    }
    // They hold the secret key: a store logged or printed must not show it.
    Object.defineProperty(this, "settings", { enumerable: false });
  }

  async put(key: string, body: Uint8Array, options: { contentType?: string } = {}): Promise<{ key: string; size: number }> {
    const objectKey = this.objectKey(key);
    // Checked here: a value the HTTP client refuses would fail as a misleading AL_ERR_BLOB_UNAVAILABLE.
    const contentType = blobContentType(key, options.contentType);
    // Copy so a caller changing its buffer during the upload cannot change what is stored.
    const bytes = Buffer.from(blobBodyBytes(key, body));
    if (bytes.byteLength >= this.settings.multipartThresholdBytes) {
      await this.upload(objectKey, bytes, contentType, key);
    } else {
      await this.send("put", key, () => this.client.send(new PutObjectCommand({ Bucket: this.settings.bucket, Key: objectKey, Body: bytes, ContentType: contentType })));
    }
    return { key, size: bytes.byteLength };
  }

  /**
   * Store a stream of unknown length, buffering one part at a time. A failure of the stream itself
   * (its own error, a chunk that is not bytes) reaches the caller as it is, not as the service failing.
   */
  async putStream(key: string, body: Readable | AsyncIterable<Uint8Array>, options: { contentType?: string } = {}): Promise<{ key: string }> {
    const objectKey = this.objectKey(key);
    const contentType = blobContentType(key, options.contentType);
    const source = new CopiedChunks(key, body);
    try {
      await this.upload(objectKey, source.stream, contentType, key);
    } catch (error) {
      if (source.failed) throw source.failure;
      throw error;
    } finally {
      // After a failed upload the source may be mid-read: stop it, so a file it reads is closed.
      source.stream.destroy();
    }
    return { key };
  }

  async get(key: string): Promise<{ body: Uint8Array; contentType: string } | undefined> {
    const found = await this.getStream(key);
    if (!found) return undefined;
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of found.body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
    } catch (error) {
      // The headers came, then the connection dropped or went quiet (ECONNRESET, the socket timeout).
      throw this.failure("get", key, error);
    }
    return { body: new Uint8Array(Buffer.concat(chunks)), contentType: found.contentType };
  }

  /** The object as a stream, without holding it in memory; undefined when the key does not exist. */
  async getStream(key: string): Promise<{ body: Readable; contentType: string; size: number | undefined } | undefined> {
    const objectKey = this.objectKey(key);
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key: objectKey }));
      const body = response.Body as Readable | undefined;
      return { body: body ?? Readable.from([]), contentType: response.ContentType ?? DEFAULT_BLOB_CONTENT_TYPE, size: response.ContentLength };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw this.failure("get", key, error);
    }
  }

  async delete(key: string): Promise<void> {
    const objectKey = this.objectKey(key);
    await this.send("delete", key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: objectKey })));
  }

  async list(prefix = ""): Promise<string[]> {
    // No key the store takes holds a lone surrogate, and such a prefix has no UTF-8 form to send.
    if (typeof prefix === "string" && LONE_SURROGATE.test(prefix)) return [];
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.send("list", prefix, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.settings.bucket, Prefix: this.settings.prefix + prefix, ...(token ? { ContinuationToken: token } : {}) })),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        const key = object.Key.slice(this.settings.prefix.length);
        // Objects written by other tools ("folder/" markers of the S3 console, the prefix itself,
        // "a//b") have keys get and delete refuse: list leaves them out, as the local store does.
        if (this.keyRefusal(key) === undefined) keys.push(key);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    // Code-unit order, as the other stores sort; S3 lists by UTF-8 bytes, which differs for astral characters.
    return keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async close(): Promise<void> {
    if (this.ownsClient) this.client.destroy();
  }

  private async upload(objectKey: string, body: Buffer | Readable, contentType: string, key: string): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.settings.bucket, Key: objectKey, Body: body, ContentType: contentType },
      partSize: this.settings.partSizeBytes,
      queueSize: 2,
      // A failed upload must not leave billed, invisible parts behind.
      leavePartsOnError: false,
    });
    await this.send("put", key, () => upload.done());
  }

  /*
   * "." and ".." segments are resolved on the way to the server, so "../x" would
   * land outside the prefix and "a/../b" on "b"; an empty segment ("/x", "a//b")
   * is refused by S3-compatible servers; a control character may not survive a
   * listing (CONTROL_CHARACTER) and a lone surrogate has no UTF-8 form to send.
   * The same segments and characters as the local store refuses, "\\" included,
   * and the C0 control characters, which the local store keeps; the length limits
   * differ (the local store also caps each segment, as a file name; see the README).
   */
  private objectKey(key: string): string {
    const refusal = this.keyRefusal(key);
    if (refusal !== undefined) {
      throw new AssemblyLineError("AL_ERR_BLOB_KEY", `blob key ${JSON.stringify(key)} ${refusal.reason}`, { fix: refusal.fix, details: { key } });
    }
    return this.settings.prefix + key;
  }

  /** Why `key` is refused, or undefined when the store takes it. */
  private keyRefusal(key: string): { reason: string; fix: string } | undefined {
    const segments = 'Use "/"-separated segments, none empty, "." or "..", e.g. "files/run-1/report.pdf".';
    if (typeof key !== "string" || key === "") return { reason: "is not a non-empty string", fix: "Use a key such as files/run-1/report.pdf." };
    const control = CONTROL_CHARACTER.exec(key)?.[0];
    if (control !== undefined) {
      const named = `U+${control.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}${CONTROL_NAMES[control] ? `, ${CONTROL_NAMES[control]}` : ""}`;
      return {
        reason: `contains a control character (${named}), which an S3 listing may not return as written`,
        fix: "Leave control characters (U+0000 to U+001F: NUL, tab, line breaks) out of keys, e.g. encode the name with encodeURIComponent.",
      };
    }
    if (key.includes("\\")) return { reason: 'contains "\\"; separate segments with "/"', fix: segments };
    if (LONE_SURROGATE.test(key)) return { reason: "is not well-formed Unicode (it holds a lone surrogate, which has no UTF-8 form)", fix: segments };
    if (key.split("/").some((segment) => segment === "" || segment === "." || segment === "..")) return { reason: 'has an empty, "." or ".." segment', fix: segments };
    const bytes = Buffer.byteLength(this.settings.prefix + key, "utf8");
    if (bytes > MAX_KEY_BYTES) return { reason: `is ${bytes} bytes long with its prefix, over S3's ${MAX_KEY_BYTES}`, fix: "Use a shorter key (hash a long name, e.g. files/<sha256>.bin)." };
    return undefined;
  }

  private async send<T>(operation: string, key: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.failure(operation, key, error);
    }
  }

  /** Names only what the store set: with a client given, its endpoint and timeouts are the client's own. */
  private failure(operation: string, key: string, error: unknown): AssemblyLineError {
    const status = error instanceof S3ServiceException ? ` (${error.name}, HTTP ${error.$metadata.httpStatusCode ?? "?"})` : "";
    const { endpoint, requestTimeoutMs } = this.settings;
    const where = this.ownsClient ? (endpoint ? ` at ${new URL(endpoint).origin}` : "") : " through the S3 client given";
    const timedOut = (error as { name?: unknown })?.name === "TimeoutError";
    const fix = this.ownsClient
      ? timedOut
        ? `The endpoint did not answer within requestTimeoutMs (${requestTimeoutMs} ms): check that it is up and reachable, or raise requestTimeoutMs.`
        : "Check the endpoint, bucket name and keys (AWS_/R2_ variables), and that the bucket exists."
      : timedOut
        ? "The S3 client given did not answer within its own timeouts: check that its endpoint is up and reachable, or raise its requestHandler timeouts."
        : "Check the S3 client's endpoint and credentials, the bucket name, and that the bucket exists.";
    return new AssemblyLineError("AL_ERR_BLOB_UNAVAILABLE", `S3 ${operation} of ${JSON.stringify(key)} in bucket ${this.settings.bucket}${where} failed${status}: ${(error as Error).message}`, {
      fix,
      cause: error,
      details: { operation, key, bucket: this.settings.bucket },
    });
  }
}

function ownClient(settings: ResolvedS3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    // The endpoint is the one the settings chose (from the store's own env): without this, with none
    // chosen the SDK would read AWS_ENDPOINT_URL(_S3) from process.env or endpoint_url from ~/.aws/config.
    ignoreConfiguredEndpointUrls: true,
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    // Checksums only where S3 requires them: R2 and most S3-compatible servers reject the newer default headers.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // Without these the SDK waits forever on an endpoint that accepts a connection and never answers.
    requestHandler: { connectionTimeout: Math.min(settings.requestTimeoutMs, 10_000), socketTimeout: settings.requestTimeoutMs },
  });
}

/**
 * A putStream source as a stream of copies of its chunks. Each chunk is copied as it is taken:
 * Readable.from reads ahead and lib-storage keeps chunks by reference until a part is full, so a
 * source that reuses its read buffer (a FileHandle.read loop yielding `buffer.subarray(0, n)`) would
 * otherwise store its last read in place of the earlier ones. What the source threw, or the refusal
 * of a chunk that is not bytes, is kept in `failure`, so the caller gets it instead of an S3 error.
 */
class CopiedChunks {
  readonly stream: Readable;
  failed = false;
  failure: unknown;

  constructor(key: string, body: unknown) {
    if (typeof body !== "object" || body === null || ArrayBuffer.isView(body) || !(Symbol.asyncIterator in body || Symbol.iterator in body)) {
      throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `blob ${JSON.stringify(key)}: putStream body is ${kindOf(body)}, not a stream of byte chunks`, {
        fix: "Pass a Readable or an async iterable of Uint8Array chunks; put() takes bytes held in memory.",
        details: { key },
      });
    }
    this.stream = Readable.from(copies(this.checked(key, body as AsyncIterable<unknown> | Iterable<unknown>)));
  }

  /**
   * Only what the source's own iteration throws counts as its failure: the stream, destroyed by a
   * failed upload, throws an AbortError into `copies`, which ends this generator without a catch.
   */
  private async *checked(key: string, body: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<ArrayBufferView> {
    try {
      for await (const chunk of body) {
        if (!ArrayBuffer.isView(chunk)) {
          throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `blob ${JSON.stringify(key)}: a chunk of the putStream body is ${kindOf(chunk)}, not bytes`, {
            fix: "Yield Uint8Array (or Buffer) chunks: a Readable with setEncoding() yields strings, an object-mode stream objects.",
            details: { key },
          });
        }
        yield chunk;
      }
    } catch (error) {
      this.failed = true;
      this.failure = error;
      throw error;
    }
  }
}

async function* copies(chunks: AsyncIterable<ArrayBufferView>): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) yield Buffer.from(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
}

function kindOf(value: unknown): string {
  return value === null ? "null" : typeof value === "object" ? `a ${(value as object).constructor?.name ?? "object"}` : `a ${typeof value}`;
}

/**
 * Only S3's own answer for an absent key. Any other 404 (an HTML page from a proxy, a wrong route
 * or host, which the SDK names "NotFound") fails as put, delete and list then do: read as "no such
 * blob", an outage would look like missing data.
 */
function isMissing(error: unknown): boolean {
  return (error as { name?: unknown })?.name === "NoSuchKey";
}
