import { randomBytes, randomUUID } from "node:crypto";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import { Readable } from "node:stream";
import { inspect } from "node:util";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { describeBlobStoreConformance } from "@assemblyline-agents/core/testkit";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3BlobStore, createS3Blob, r2Blob, s3Blob } from "../src/index.js";
import { s3rverInstalled, startS3rver, type RunningS3rver } from "./support/s3rver.js";

const BUCKET = "al-test-blobs";
const KEYS = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" };

if (!s3rverInstalled()) {
  if (process.env.CI) throw new Error("S3BlobStore suite: s3rver is not installed; CI requires it (npm ci installs it)");
  console.log("skipping S3BlobStore suite: s3rver is not installed");
} else {
  let server: RunningS3rver;
  beforeAll(async () => {
    server = await startS3rver([BUCKET]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  // Each kit test gets its own prefix in the shared bucket, so it sees only its own keys.
  describeBlobStoreConformance("S3BlobStore (s3rver)", () => {
    const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `kit-${randomUUID()}/`, env: KEYS });
    return { state: store, cleanup: () => store.close() };
  });

  describe("S3BlobStore", () => {
    it("sends a large object as a multipart upload and reads back the same bytes", async () => {
      const client = new S3Client({ endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }, requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" });
      const commands: string[] = [];
      client.middlewareStack.add((next, context) => (args) => (commands.push(String(context.commandName)), next(args)), { step: "initialize", name: "recordCommands" });
      const store = new S3BlobStore({ bucket: BUCKET, client, prefix: `mp-${randomUUID()}/`, multipartThresholdBytes: 5 * 1024 * 1024, partSizeBytes: 5 * 1024 * 1024 });
      const body = randomBytes(11 * 1024 * 1024);
      expect(await store.put("big.bin", body, { contentType: "application/x-big" })).toEqual({ key: "big.bin", size: body.byteLength });
      expect(commands.filter((name) => name === "UploadPartCommand")).toHaveLength(3);
      expect(commands).toContain("CompleteMultipartUploadCommand");
      expect(commands).not.toContain("PutObjectCommand");
      const got = await store.get("big.bin");
      expect(got?.contentType).toBe("application/x-big");
      expect(Buffer.from(got!.body).equals(body)).toBe(true);
      commands.length = 0;
      await store.put("small.bin", randomBytes(1024));
      expect(commands).toEqual(["PutObjectCommand"]);
      client.destroy();
    }, 60_000);

    it("streams a read chunk by chunk and stores a stream of unknown length", async () => {
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `st-${randomUUID()}/`, env: KEYS });
      const parts = Array.from({ length: 4 }, () => randomBytes(300_000));
      await store.putStream("streamed.bin", Readable.from(parts), { contentType: "application/x-stream" });
      const found = await store.getStream("streamed.bin");
      expect(found?.size).toBe(1_200_000);
      expect(found?.body).toBeInstanceOf(Readable);
      const chunks: Buffer[] = [];
      for await (const chunk of found!.body) chunks.push(chunk as Buffer);
      expect(chunks.length).toBeGreaterThan(1);
      expect(Buffer.concat(chunks).equals(Buffer.concat(parts))).toBe(true);
      expect(await store.getStream("absent.bin")).toBeUndefined();
      await store.close();
    });

    it("stores each chunk of a stream as it was when yielded, from a source that reuses its read buffer", async () => {
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `reuse-${randomUUID()}/`, env: KEYS });
      // A FileHandle.read loop: every read lands in the same buffer, yielded as a view of it.
      async function* readsIntoOneBuffer() {
        const buffer = Buffer.alloc(4);
        for (const letter of "abcd") {
          buffer.fill(letter);
          yield buffer.subarray(0, 4);
        }
      }
      await store.putStream("file.txt", readsIntoOneBuffer());
      expect(new TextDecoder().decode((await store.get("file.txt"))?.body)).toBe("aaaabbbbccccdddd");
      await store.close();
    });

    it("fails putStream with the stream's own error, and refuses a chunk that is not bytes, instead of calling the service unavailable", async () => {
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `src-${randomUUID()}/`, env: KEYS });
      const readFailed = new Error("disk read failed");
      const failing = (async function* () {
        yield new Uint8Array([1]);
        throw readFailed;
      })();
      expect(await store.putStream("broken.bin", failing).catch((caught: unknown) => caught)).toBe(readFailed);
      // A Readable with setEncoding() yields strings; put() refuses a string body the same way.
      for (const body of [Readable.from(["not bytes"]), "not a stream"]) {
        const error = await store.putStream("text.bin", body as never).catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_STATE_INPUT_INVALID"), String(error)).toBe(true);
        expect(String(error)).toContain("a string");
      }
      expect(await store.list()).toEqual([]);
      await store.close();
    });

    it("stops reading a stream whose upload failed", async () => {
      const store = new S3BlobStore({ bucket: "al-absent-bucket", endpoint: server.endpoint, partSizeBytes: 5 * 1024 * 1024, env: KEYS });
      let closed = false;
      const endless = (async function* () {
        try {
          for (;;) yield Buffer.alloc(1024 * 1024);
        } finally {
          closed = true;
        }
      })();
      const error = await store.putStream("endless.bin", endless).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_UNAVAILABLE"), String(error)).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(closed).toBe(true);
      await store.close();
    });

    it("lists past one page of 1000 keys", async () => {
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `pg-${randomUUID()}/`, env: KEYS });
      const keys = Array.from({ length: 1005 }, (_, index) => `k/${String(index).padStart(4, "0")}`);
      for (let index = 0; index < keys.length; index += 50) await Promise.all(keys.slice(index, index + 50).map((key) => store.put(key, new Uint8Array([1]))));
      expect(await store.list("k/")).toEqual(keys);
      await store.close();
    }, 120_000);

    it("reports a missing bucket as AL_ERR_BLOB_UNAVAILABLE naming the bucket", async () => {
      const store = new S3BlobStore({ bucket: "no-such-bucket", endpoint: server.endpoint, env: KEYS });
      const error = await store.put("x", new Uint8Array([1])).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toContain("no-such-bucket");
      await store.close();
    });

    it('refuses keys with ".", ".." or empty segments, which the request path would resolve outside the prefix', async () => {
      const prefix = `dots-${randomUUID()}/`;
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `${prefix}tenant/`, env: KEYS });
      const whole = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix, env: KEYS });
      for (const key of ["../escaped.txt", "a/../b.txt", "./c.txt", "/d.txt", "e//f.txt"]) {
        const error = await store.put(key, new TextEncoder().encode(key)).catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_BLOB_KEY"), `${key}: ${String(error)}`).toBe(true);
        expect(String(error)).toContain(JSON.stringify(key));
        expect(isAssemblyLineError(await store.get(key).catch((caught: unknown) => caught), "AL_ERR_BLOB_KEY")).toBe(true);
      }
      expect(await whole.list()).toEqual([]);
      await store.close();
      await whole.close();
    });

    it("refuses a key with a NUL, a backslash or a lone surrogate with AL_ERR_BLOB_KEY, as the local store does, before sending it", async () => {
      const client = new S3Client({ endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
      const commands: string[] = [];
      client.middlewareStack.add((next, context) => (args) => (commands.push(String(context.commandName)), next(args)), { step: "initialize", name: "recordCommands" });
      const store = new S3BlobStore({ bucket: BUCKET, client, prefix: `odd-${randomUUID()}/` });
      for (const key of ["a\0b", "a\\b", "note-\uD800.txt", "notes/\uDC00/a.txt"]) {
        for (const call of [() => store.put(key, new Uint8Array([1])), () => store.get(key), () => store.getStream(key), () => store.delete(key)]) {
          const error = await call().catch((caught: unknown) => caught);
          expect(isAssemblyLineError(error, "AL_ERR_BLOB_KEY"), `${JSON.stringify(key)}: ${String(error)}`).toBe(true);
        }
      }
      // No key it takes can start so, as the local store answers.
      expect(await store.list("notes/\uD800")).toEqual([]);
      expect(commands).toEqual([]);
      client.destroy();
    });

    it("refuses a key with a control character, which s3rver's listing would return as another key, and lists only keys it can reach", async () => {
      const client = new S3Client({ endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }, requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" });
      const prefix = `ctl-${randomUUID()}/`;
      // s3rver writes a CR raw in its XML listing, which reads it back as a LF: "a\rb.txt" would be listed as "a\nb.txt".
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}notes/a\rb.txt`, Body: "written by another tool" }));
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix, env: KEYS });
      for (const [key, named] of [["notes/a\rb.txt", "U+000D, carriage return"], ["notes/a\nb.txt", "U+000A, line feed"], ["notes/a\tb.txt", "U+0009, tab"], ["notes/a\u001fb.txt", "U+001F"]] as const) {
        for (const call of [() => store.put(key, new Uint8Array([1])), () => store.get(key), () => store.getStream(key), () => store.delete(key)]) {
          const error = await call().catch((caught: unknown) => caught);
          expect(isAssemblyLineError(error, "AL_ERR_BLOB_KEY"), `${JSON.stringify(key)}: ${String(error)}`).toBe(true);
          expect(String(error)).toContain(named);
        }
      }
      await store.put("notes/ok.txt", new TextEncoder().encode("ok"));
      expect(await store.list("notes/")).toEqual(["notes/ok.txt"]);
      for (const key of await store.list()) expect(await store.get(key), key).toBeDefined();
      await store.close();
      client.destroy();
    });

    it("refuses a key longer than S3's 1024 bytes (prefix included) before sending it", async () => {
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `long-${randomUUID()}/`, env: KEYS });
      const key = Array.from({ length: 11 }, () => "k".repeat(99)).join("/");
      const error = await store.put(key, new Uint8Array([1])).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_KEY"), String(error)).toBe(true);
      expect(String(error)).toContain("1024");
      expect(await store.list()).toEqual([]);
      await store.close();
    });

    it('lists only keys it can get and delete, leaving out "folder/" markers and the prefix object other tools write', async () => {
      const client = new S3Client({ endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }, requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" });
      const prefix = `markers-${randomUUID()}/`;
      // What the S3 console's "Create folder" and many sync tools write: zero-byte "<folder>/" objects.
      for (const Key of [prefix, `${prefix}reports/`, `${prefix}reports/q1.pdf`]) {
        await client.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body: Buffer.alloc(Key.endsWith("/") ? 0 : 3) }));
      }
      const store = new S3BlobStore({ bucket: BUCKET, client, prefix });
      expect(await store.list()).toEqual(["reports/q1.pdf"]);
      expect(await store.list("reports/")).toEqual(["reports/q1.pdf"]);
      for (const key of await store.list()) {
        expect((await store.get(key))?.body.byteLength).toBe(3);
        await store.delete(key);
      }
      expect(await store.list()).toEqual([]);
      client.destroy();
    });

    it("refuses an endpoint with a path, which the S3 client would put in front of every key, naming the bucket option instead", async () => {
      // put("report.txt") would be stored as "<bucket>/report.txt", and list() would fail.
      const error = await Promise.resolve()
        .then(() => new S3BlobStore({ bucket: BUCKET, endpoint: `${server.endpoint}/${BUCKET}`, env: KEYS }))
        .catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_CONFIG"), String(error)).toBe(true);
      expect(String(error)).toContain(`has a path (/${BUCKET})`);
      expect((error as { fix: string }).fix).toContain(`Use the endpoint without it (${server.endpoint})`);
      expect((error as { fix: string }).fix).toContain("bucket");
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: `${server.endpoint}/`, prefix: `ep-${randomUUID()}/`, env: KEYS });
      await store.put("report.txt", new TextEncoder().encode("hi"));
      expect(await store.list()).toEqual(["report.txt"]);
      await store.close();
    });

    it("takes an empty AWS_REGION as unset, reading and writing in us-east-1", async () => {
      const store = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `region-${randomUUID()}/`, env: { ...KEYS, AWS_REGION: "" } });
      expect(store.settings.region).toBe("us-east-1");
      await store.put("a.txt", new TextEncoder().encode("a"));
      expect(new TextDecoder().decode((await store.get("a.txt"))?.body)).toBe("a");
      await store.close();
    });

    it("keeps two stores whose prefixes start the same way apart", async () => {
      const base = `tenants-${randomUUID()}/`;
      const a = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `${base}a/`, env: KEYS });
      const ab = new S3BlobStore({ bucket: BUCKET, endpoint: server.endpoint, prefix: `${base}ab/`, env: KEYS });
      await ab.put("secret.txt", new TextEncoder().encode("ab's"));
      expect(await a.list()).toEqual([]);
      expect(await ab.list()).toEqual(["secret.txt"]);
      await a.close();
      await ab.close();
    });

    it("materializes r2Blob() against an S3 endpoint given by R2_ENDPOINT, with R2 keys", async () => {
      const secret = `secret-${randomUUID()}`;
      const store = createS3Blob(r2Blob(), { env: { R2_ENDPOINT: server.endpoint, R2_BUCKET: BUCKET, R2_ACCESS_KEY_ID: "S3RVER", R2_SECRET_ACCESS_KEY: secret } });
      expect(store.settings).toMatchObject({ bucket: BUCKET, endpoint: server.endpoint, region: "auto", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: secret } });
      // A store that is logged or printed shows no secret key.
      expect(inspect(store, { depth: 10 })).not.toContain(secret);
      const key = `r2-${randomUUID()}`;
      await store.put(key, new TextEncoder().encode("via r2"));
      expect(new TextDecoder().decode((await store.get(key))?.body)).toBe("via r2");
      await store.close();
    });
  });
}

describe("S3BlobStore against an endpoint that never answers", () => {
  it("fails with AL_ERR_BLOB_UNAVAILABLE naming the endpoint after requestTimeoutMs, instead of waiting forever", async () => {
    // Accepts connections and reads requests, never answers: a hung proxy or server.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const store = new S3BlobStore({ bucket: BUCKET, endpoint, requestTimeoutMs: 300, env: KEYS });
    try {
      const started = Date.now();
      for (const attempt of [() => store.get("x"), () => store.put("x", new Uint8Array([1])), () => store.list()]) {
        const error = await attempt().catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_BLOB_UNAVAILABLE"), String(error)).toBe(true);
        expect(String(error)).toContain(endpoint);
        expect((error as { fix: string }).fix).toContain("requestTimeoutMs");
      }
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await store.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 30_000);
});

describe("S3BlobStore against an endpoint that fails in the middle of a body", () => {
  it.each([
    ["drops the connection", "close", "aborted"],
    ["goes quiet past requestTimeoutMs", "hang", "requestTimeoutMs"],
  ])("get() fails with AL_ERR_BLOB_UNAVAILABLE when the endpoint %s after the headers", async (_, mode, expected) => {
    // Promises 100 bytes, sends 10, then closes the socket or says nothing more.
    const server = createHttpServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": "100", etag: '"x"' });
      response.write(Buffer.alloc(10, 65));
      if (mode === "close") setTimeout(() => response.socket?.destroy(), 50);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const store = new S3BlobStore({ bucket: BUCKET, endpoint, requestTimeoutMs: 300, env: KEYS });
    try {
      const error = await store.get("half.bin").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toContain(endpoint);
      expect(String(error)).toContain('"half.bin"');
      expect(`${String(error)} ${(error as { fix?: string }).fix}`).toContain(expected);
    } finally {
      await store.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);
});

describe("S3BlobStore behind a proxy that answers 404 with an HTML page", () => {
  it("fails get() and getStream() with AL_ERR_BLOB_UNAVAILABLE, as put, delete and list, instead of answering that the blob does not exist", async () => {
    // A reverse proxy, a wrong host or route: every request gets its 404 page, never S3's NoSuchKey.
    const server = createHttpServer((request, response) => {
      request.resume();
      response.writeHead(404, { "content-type": "text/html" });
      response.end("<html><body><h1>404 Not Found</h1></body></html>");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const store = new S3BlobStore({ bucket: BUCKET, endpoint, env: KEYS });
    try {
      for (const [name, call] of [["get", () => store.get("a.txt")], ["getStream", () => store.getStream("a.txt")], ["put", () => store.put("a.txt", new Uint8Array([1]))], ["delete", () => store.delete("a.txt")], ["list", () => store.list()]] as const) {
        const error = await call().then((value: unknown) => ({ answered: value }), (caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_BLOB_UNAVAILABLE"), `${name}: ${inspect(error)}`).toBe(true);
        expect(String(error)).toContain("HTTP 404");
        expect(String(error)).toContain(endpoint);
      }
    } finally {
      await store.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);
});

describe("S3BlobStore given a client", () => {
  const clientOf = (endpoint: string, socketTimeout?: number) =>
    new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }, maxAttempts: 1, ...(socketTimeout ? { requestHandler: { socketTimeout } } : {}) });
  const refusal = (make: () => unknown) => {
    try {
      make();
    } catch (error) {
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_CONFIG"), String(error)).toBe(true);
      return { message: String(error), fix: (error as { fix: string }).fix };
    }
    throw new Error("accepted");
  };

  it.each([
    ["endpoint", { endpoint: "http://127.0.0.1:4568" }],
    ["region", { region: "eu-west-1" }],
    ["forcePathStyle", { forcePathStyle: false }],
    ["requestTimeoutMs", { requestTimeoutMs: 100 }],
    ["accessKeyIdEnv", { accessKeyIdEnv: ["MY_ACCESS_KEY_ID"] }],
    ["secretAccessKeyEnv", { secretAccessKeyEnv: ["MY_SECRET_ACCESS_KEY"] }],
    ["sessionTokenEnv", { sessionTokenEnv: ["MY_SESSION_TOKEN"] }],
    ["endpointEnv", { endpointEnv: ["MY_ENDPOINT"] }],
    ["accountIdEnv", { accountIdEnv: ["MY_ACCOUNT_ID"] }],
  ])("refuses %s beside it with AL_ERR_BLOB_CONFIG, instead of ignoring it", (name, option) => {
    const client = clientOf("http://127.0.0.1:1");
    try {
      const refused = refusal(() => new S3BlobStore({ bucket: BUCKET, client, ...option }));
      expect(refused.message).toContain(`option ${name} is for the store's own S3 client; with client given, it would be ignored`);
      expect(refused.fix).toContain("the client's own configuration (endpoint, region, credentials, timeouts) applies");
    } finally {
      client.destroy();
    }
  });

  it("names every such option at once, and still takes the options the store applies itself", () => {
    const client = clientOf("http://127.0.0.1:1");
    try {
      const refused = refusal(() => new S3BlobStore({ bucket: BUCKET, client, endpoint: "http://127.0.0.1:4568", requestTimeoutMs: 100, region: "eu-west-1", prefix: "agents/" }));
      expect(refused.message).toContain("options endpoint, region, requestTimeoutMs are for the store's own S3 client");
      const store = new S3BlobStore({ bucket: BUCKET, client, prefix: "agents/", multipartThresholdBytes: 6 * 1024 * 1024, partSizeBytes: 5 * 1024 * 1024 });
      expect(store.settings).toEqual({ bucket: BUCKET, prefix: "agents/", multipartThresholdBytes: 6 * 1024 * 1024, partSizeBytes: 5 * 1024 * 1024 });
      // Nothing the client would not use is read from env: no endpoint, no keys (half a pair is no refusal either).
      const fromEnv = new S3BlobStore({ client, env: { S3_BUCKET: "from-env", S3_ENDPOINT: "http://127.0.0.1:9", AWS_ACCESS_KEY_ID: "half-a-pair" } });
      expect(fromEnv.settings).toMatchObject({ bucket: "from-env" });
      expect(fromEnv.settings.endpoint).toBeUndefined();
      expect(fromEnv.settings.credentials).toBeUndefined();
    } finally {
      client.destroy();
    }
  });

  it("materializes an s3Blob() or r2Blob() descriptor with it, refusing only the client options written into the descriptor", () => {
    const client = clientOf("http://127.0.0.1:1");
    try {
      // The variable lists the helpers fill in are theirs, not the user's.
      expect(createS3Blob(s3Blob({ bucket: "media", prefix: "a/" }), { client, env: {} }).settings).toEqual({ bucket: "media", prefix: "a/", multipartThresholdBytes: 8 * 1024 * 1024, partSizeBytes: 8 * 1024 * 1024 });
      expect(createS3Blob(r2Blob(), { client, env: { R2_BUCKET: "r2-media" } }).settings.bucket).toBe("r2-media");
      expect(refusal(() => createS3Blob(s3Blob({ bucket: "media", endpoint: "http://127.0.0.1:4568" }), { client, env: {} })).message).toContain("option endpoint is for the store's own S3 client");
      const own = refusal(() => createS3Blob(s3Blob({ bucket: "media", accessKeyIdEnv: ["MY_ACCESS_KEY_ID"], secretAccessKeyEnv: ["MY_SECRET_ACCESS_KEY"] }), { client, env: {} }));
      expect(own.message).toContain("options accessKeyIdEnv, secretAccessKeyEnv are for the store's own S3 client");
    } finally {
      client.destroy();
    }
  });

  it("fails through a client whose endpoint never answers without naming an endpoint or a timeout the store did not set", async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const client = clientOf(`http://127.0.0.1:${(silent.address() as { port: number }).port}`, 300);
    // S3_ENDPOINT is what a store of its own would have used.
    const store = new S3BlobStore({ bucket: BUCKET, client, env: { S3_ENDPOINT: "http://127.0.0.1:9", ...KEYS } });
    try {
      const error = await store.put("x", new Uint8Array([1])).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toContain(`S3 put of "x" in bucket ${BUCKET} through the S3 client given failed`);
      expect(String(error)).not.toContain("127.0.0.1:9");
      const fix = (error as { fix: string }).fix;
      expect(fix).not.toContain("requestTimeoutMs");
      expect(fix).toContain("did not answer within its own timeouts");
    } finally {
      await store.close();
      client.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 30_000);
});

describe("s3Blob() / r2Blob() settings", () => {
  it.each([
    ["a user name and password", "https://AKIAEXAMPLE:sekrit@acct.r2.cloudflarestorage.com", "holds a user name or password"],
    ["a query string", "https://acct.r2.cloudflarestorage.com/?X-Amz-Security-Token=sekrit", "has a query string"],
    ["a fragment", "https://acct.r2.cloudflarestorage.com#sekrit", "has a fragment"],
    ["another scheme, with keys", "s3://AKIAEXAMPLE:sekrit@acct.r2.cloudflarestorage.com", "is not http(s)"],
    ["no scheme, with keys", "AKIAEXAMPLE:sekrit@acct.r2.cloudflarestorage.com", "has no http:// or https:// scheme"],
  ])("refuses an endpoint with %s with AL_ERR_BLOB_CONFIG naming the part, never quoting a secret", (_, endpoint, problem) => {
    for (const make of [() => createS3Blob(r2Blob({ bucket: "media", endpoint }), { env: {} }), () => createS3Blob(r2Blob({ bucket: "media" }), { env: { R2_ENDPOINT: endpoint } })]) {
      let error: unknown;
      try {
        make();
      } catch (caught) {
        error = caught;
      }
      expect(isAssemblyLineError(error, "AL_ERR_BLOB_CONFIG"), String(error)).toBe(true);
      const told = `${String(error)} ${(error as { fix: string }).fix}`;
      expect(told).toContain(problem);
      expect(told).not.toContain("sekrit");
      expect(told).not.toContain("AKIAEXAMPLE");
    }
  });

  it("names the variable an endpoint came from", () => {
    expect(() => createS3Blob(r2Blob({ bucket: "media" }), { env: { R2_ENDPOINT: "https://acct.r2.cloudflarestorage.com/media" } })).toThrow(
      'endpoint "https://acct.r2.cloudflarestorage.com/media" (from R2_ENDPOINT) has a path (/media)',
    );
  });

  it("reads the endpoint from S3_ENDPOINT, else the AWS SDK's AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, in the store's env", () => {
    const endpointFrom = (env: Record<string, string>) => createS3Blob(s3Blob({ bucket: "media" }), { env }).settings;
    const all = { S3_ENDPOINT: "http://127.0.0.1:1", AWS_ENDPOINT_URL_S3: "http://127.0.0.1:2", AWS_ENDPOINT_URL: "http://127.0.0.1:3" };
    expect(endpointFrom(all)).toMatchObject({ endpoint: "http://127.0.0.1:1", forcePathStyle: true });
    expect(endpointFrom({ ...all, S3_ENDPOINT: "" })).toMatchObject({ endpoint: "http://127.0.0.1:2", forcePathStyle: true });
    expect(endpointFrom({ AWS_ENDPOINT_URL: "http://127.0.0.1:3" })).toMatchObject({ endpoint: "http://127.0.0.1:3", forcePathStyle: true });
    expect(() => endpointFrom({ AWS_ENDPOINT_URL_S3: "http://127.0.0.1:2/media" })).toThrow("(from AWS_ENDPOINT_URL_S3) has a path (/media)");
  });

  it("sends to AWS when no endpoint is set, never to an AWS_ENDPOINT_URL_S3 in process.env that its env does not hold", async () => {
    const saved = process.env.AWS_ENDPOINT_URL_S3;
    process.env.AWS_ENDPOINT_URL_S3 = "http://127.0.0.1:9";
    try {
      const store = new S3BlobStore({ bucket: "media", env: { AWS_ACCESS_KEY_ID: "k", AWS_SECRET_ACCESS_KEY: "s" } });
      expect(store.settings.endpoint).toBeUndefined();
      // Record where the request would go, and stop it there.
      const client = (store as unknown as { client: S3Client }).client;
      const hosts: string[] = [];
      client.middlewareStack.add(
        () => (args) => {
          hosts.push(String((args.request as { hostname?: string }).hostname));
          throw new Error("not sent");
        },
        { step: "finalizeRequest", name: "recordHost" },
      );
      await store.put("a.txt", new Uint8Array([1])).catch(() => undefined);
      expect(hosts).toEqual(["media.s3.us-east-1.amazonaws.com"]);
      await store.close();
    } finally {
      if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_S3;
      else process.env.AWS_ENDPOINT_URL_S3 = saved;
    }
  });

  it("leaves bucket names AWS refuses but other S3 services take to the service", () => {
    // Ceph's relaxed names and AWS's legacy us-east-1 buckets: capitals, underscores, up to 255 characters.
    for (const bucket of ["Legacy_Bucket.2019", "ab", "b".repeat(255)]) expect(createS3Blob(s3Blob({ bucket }), { env: {} }).settings.bucket).toBe(bucket);
    expect(() => createS3Blob(s3Blob(), { env: { S3_BUCKET: "media/agents/" } })).toThrow('{ bucket: "media", prefix: "agents/" }');
  });

  it("derives R2's endpoint from R2_ACCOUNT_ID", () => {
    const store = createS3Blob(r2Blob({ bucket: "media" }), { env: { R2_ACCOUNT_ID: "abc123", AWS_ACCESS_KEY_ID: "k", AWS_SECRET_ACCESS_KEY: "s" } });
    expect(store.settings).toMatchObject({ endpoint: "https://abc123.r2.cloudflarestorage.com", region: "auto", forcePathStyle: true, credentials: { accessKeyId: "k", secretAccessKey: "s" } });
  });

  it("sends the session token of temporary credentials with the key pair, R2's from R2_SESSION_TOKEN only", () => {
    const aws = { AWS_ACCESS_KEY_ID: "ASIAK", AWS_SECRET_ACCESS_KEY: "s", AWS_SESSION_TOKEN: "role-token" };
    expect(createS3Blob(s3Blob({ bucket: "media" }), { env: aws }).settings.credentials).toEqual({ accessKeyId: "ASIAK", secretAccessKey: "s", sessionToken: "role-token" });
    expect(createS3Blob(s3Blob({ bucket: "media" }), { env: { AWS_ACCESS_KEY_ID: "AKIA", AWS_SECRET_ACCESS_KEY: "s" } }).settings.credentials).toEqual({ accessKeyId: "AKIA", secretAccessKey: "s" });
    // A host on AWS has a session token for its own role: R2 would refuse it.
    const r2 = { R2_ACCOUNT_ID: "abc123", R2_ACCESS_KEY_ID: "r2k", R2_SECRET_ACCESS_KEY: "r2s" };
    expect(createS3Blob(r2Blob({ bucket: "media" }), { env: { ...r2, AWS_SESSION_TOKEN: "role-token" } }).settings.credentials).toEqual({ accessKeyId: "r2k", secretAccessKey: "r2s" });
    expect(createS3Blob(r2Blob({ bucket: "media" }), { env: { ...r2, R2_SESSION_TOKEN: "r2-temp" } }).settings.credentials).toEqual({ accessKeyId: "r2k", secretAccessKey: "r2s", sessionToken: "r2-temp" });
    // Keys from a variable of another name take no token: the host's own AWS_SESSION_TOKEN is not theirs.
    const minio = { MINIO_ACCESS_KEY_ID: "mk", MINIO_SECRET_ACCESS_KEY: "ms", AWS_SESSION_TOKEN: "role-token" };
    expect(createS3Blob(s3Blob({ bucket: "media", accessKeyIdEnv: ["MINIO_ACCESS_KEY_ID"], secretAccessKeyEnv: ["MINIO_SECRET_ACCESS_KEY"] }), { env: minio }).settings.credentials).toEqual({ accessKeyId: "mk", secretAccessKey: "ms" });
    // An r2Blob() descriptor built before sessionTokenEnv existed reads R2's variable too.
    const { sessionTokenEnv: _, ...older } = r2Blob({ bucket: "media" }).options;
    expect(createS3Blob({ ...r2Blob(), options: older }, { env: { ...r2, AWS_SESSION_TOKEN: "role-token" } }).settings.credentials).toEqual({ accessKeyId: "r2k", secretAccessKey: "r2s" });
  });

  it("reads the key id and the secret from one credential set, refusing a half-set pair instead of taking the other half from the next set", () => {
    const refusal = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        expect(isAssemblyLineError(error, "AL_ERR_BLOB_CONFIG"), String(error)).toBe(true);
        return `${String(error)} ${(error as { fix: string }).fix}`;
      }
      throw new Error("accepted");
    };
    // A host on AWS holds its role's keys; R2_SECRET_ACCESS_KEY is misspelt.
    const role = { AWS_ACCESS_KEY_ID: "ASIAHOSTROLE", AWS_SECRET_ACCESS_KEY: "host-role-secret", AWS_SESSION_TOKEN: "host-role-token" };
    const r2 = refusal(() => createS3Blob(r2Blob({ bucket: "media" }), { env: { ...role, R2_ACCOUNT_ID: "abc123", R2_ACCESS_KEY_ID: "r2-key-id", R2_SECRET_KEY: "r2-secret" } }));
    expect(r2).toContain("R2_ACCESS_KEY_ID is set but R2_SECRET_ACCESS_KEY is not");
    expect(r2).not.toMatch(/host-role-secret|r2-secret|r2-key-id/);
    expect(refusal(() => createS3Blob(r2Blob({ bucket: "media" }), { env: { ...role, R2_ACCOUNT_ID: "abc123", R2_SECRET_ACCESS_KEY: "r2-secret" } }))).toContain("R2_SECRET_ACCESS_KEY is set but R2_ACCESS_KEY_ID is not");
    const own = { accessKeyIdEnv: ["MY_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"], secretAccessKeyEnv: ["MY_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"] };
    expect(refusal(() => createS3Blob(s3Blob({ bucket: "b", ...own }), { env: { ...role, MY_ACCESS_KEY_ID: "mine" } }))).toContain("MY_ACCESS_KEY_ID is set but MY_SECRET_ACCESS_KEY is not");
    // Lists of different lengths cannot be read in pairs.
    expect(refusal(() => createS3Blob(s3Blob({ bucket: "b", accessKeyIdEnv: ["MY_ACCESS_KEY_ID"], secretAccessKeyEnv: ["MY_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"] }), { env: role }))).toContain("differ in length");
    // A whole pair is taken; none set at a place passes to the next.
    expect(createS3Blob(s3Blob({ bucket: "b", ...own }), { env: { ...role, MY_ACCESS_KEY_ID: "mine", MY_SECRET_ACCESS_KEY: "my-secret" } }).settings.credentials).toEqual({ accessKeyId: "mine", secretAccessKey: "my-secret" });
    expect(createS3Blob(r2Blob({ bucket: "media" }), { env: { ...role, R2_ACCOUNT_ID: "abc123", R2_ACCESS_KEY_ID: "" } }).settings.credentials).toEqual({ accessKeyId: "ASIAHOSTROLE", secretAccessKey: "host-role-secret" });
  });

  it.each([
    ["an empty region", () => createS3Blob(s3Blob({ bucket: "media", region: "" }), { env: {} }), "region"],
    ["a variable list given as one string", () => createS3Blob(s3Blob({ bucket: "media", accessKeyIdEnv: "MY_AK" as never }), { env: { M: "x", Y: "y" } }), "accessKeyIdEnv"],
    ["r2Blob() without R2_ACCOUNT_ID", () => createS3Blob(r2Blob({ bucket: "media" }), { env: {} }), "R2_ACCOUNT_ID"],
    ["s3Blob() without a bucket", () => createS3Blob(s3Blob(), { env: {} }), "S3_BUCKET"],
    ["half a key pair", () => createS3Blob(s3Blob({ bucket: "media" }), { env: { AWS_ACCESS_KEY_ID: "k" } }), "AWS_SECRET_ACCESS_KEY"],
    ["a non-URL endpoint", () => createS3Blob(s3Blob({ bucket: "media", endpoint: "localhost:9000" }), { env: {} }), "localhost:9000"],
    ["a prefix without its closing /", () => createS3Blob(s3Blob({ bucket: "media", prefix: "agents/support" }), { env: {} }), '"agents/support/"'],
    ["a prefix with a line break", () => createS3Blob(s3Blob({ bucket: "media", prefix: "agents/\n/" }), { env: {} }), "control character"],
    ["a prefix with a \\", () => createS3Blob(s3Blob({ bucket: "media", prefix: "agents\\support/" }), { env: {} }), "\\"],
    ["a prefix with a lone surrogate", () => createS3Blob(s3Blob({ bucket: "media", prefix: "agents/\uD800/" }), { env: {} }), "lone surrogate"],
    ["a bucket with a folder, from S3_BUCKET", () => createS3Blob(s3Blob(), { env: { S3_BUCKET: "media/agents" } }), 'bucket "media/agents" (from S3_BUCKET) holds a "/"'],
    ["a bucket with a space", () => createS3Blob(s3Blob({ bucket: "my media" }), { env: {} }), "whitespace"],
    ["a bucket of over 255 characters", () => createS3Blob(s3Blob({ bucket: "b".repeat(256) }), { env: {} }), "256 characters"],
    ["a bucket that is not a string", () => createS3Blob(s3Blob({ bucket: 7 as never }), { env: {} }), "bucket 7"],
    ["forcePathStyle given as a string", () => createS3Blob(s3Blob({ bucket: "media", forcePathStyle: "false" as never }), { env: {} }), "forcePathStyle"],
    ["a prefix with a .. segment", () => createS3Blob(s3Blob({ bucket: "media", prefix: "agents/../other/" }), { env: {} }), "agents/../other/"],
    ["a misspelt option", () => createS3Blob(s3Blob({ bucket: "media", perfix: "agents/" } as never), { env: {} }), "perfix"],
    ["a part above S3's 5 GiB maximum", () => createS3Blob(s3Blob({ bucket: "media", partSizeBytes: 6 * 1024 ** 3 }), { env: {} }), "partSizeBytes"],
    ["a requestTimeoutMs of 0", () => createS3Blob(s3Blob({ bucket: "media", requestTimeoutMs: 0 }), { env: {} }), "requestTimeoutMs"],
  ])("refuses %s with AL_ERR_BLOB_CONFIG naming it", (_, make, named) => {
    let error: unknown;
    try {
      make();
    } catch (caught) {
      error = caught;
    }
    expect(isAssemblyLineError(error, "AL_ERR_BLOB_CONFIG"), String(error)).toBe(true);
    expect(String(error)).toContain(named);
  });
});
