import { describe, expect, it } from "vitest";
import type { BlobStore } from "../blob.js";
import { isAssemblyLineError } from "../errors.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array | undefined) => (body ? new TextDecoder().decode(body) : undefined);

/**
 * The BlobStore contract: put, get, delete and list by prefix, byte-exact.
 *
 * Also the input rules every store shares, so a blob moves between them:
 * contentType as `blobContentType` (core) takes it and body as `blobBodyBytes`
 * takes it. A store that passes its input through those two passes them;
 * `inputRules: false` leaves them out for a store written before they existed.
 */
export function describeBlobStoreConformance(name: string, factory: StateKitFactory<BlobStore>, options: { inputRules?: boolean } = {}): void {
  describe(`${name}: BlobStore conformance`, () => {
    const store = useSubject(factory);
    /** A case of the shared input rules, run unless the store opts out. */
    const inputRule = it.runIf(options.inputRules !== false);

    it("returns the bytes and content type that were put", async () => {
      const body = new Uint8Array(256).map((_, index) => index);
      expect(await store().put("files/run-1/all-bytes.bin", body, { contentType: "application/x-test" })).toEqual({
        key: "files/run-1/all-bytes.bin",
        size: 256,
      });
      const got = await store().get("files/run-1/all-bytes.bin");
      expect(got?.contentType).toBe("application/x-test");
      expect(Buffer.from(got!.body).equals(Buffer.from(body))).toBe(true);
    });

    it("defaults the content type to application/octet-stream", async () => {
      await store().put("plain", bytes("x"));
      expect((await store().get("plain"))?.contentType).toBe("application/octet-stream");
    });

    it("stores an empty body", async () => {
      expect(await store().put("empty", new Uint8Array(0))).toEqual({ key: "empty", size: 0 });
      expect((await store().get("empty"))?.body.byteLength).toBe(0);
    });

    it("replaces a blob that is put again", async () => {
      await store().put("doc.txt", bytes("first"), { contentType: "text/plain" });
      await store().put("doc.txt", bytes("second"), { contentType: "text/markdown" });
      const got = await store().get("doc.txt");
      expect(text(got?.body)).toBe("second");
      expect(got?.contentType).toBe("text/markdown");
    });

    it("returns undefined for a missing key, and deleting one is not an error", async () => {
      expect(await store().get("missing/key")).toBeUndefined();
      await store().delete("missing/key");
    });

    it("deletes a blob", async () => {
      await store().put("gone.txt", bytes("x"));
      await store().delete("gone.txt");
      expect(await store().get("gone.txt")).toBeUndefined();
      expect(await store().list()).not.toContain("gone.txt");
    });

    it("lists keys under a prefix, sorted", async () => {
      for (const key of ["files/b.txt", "files/a/1.txt", "files-old/c.txt", "other.txt", "files/a/2.txt"]) await store().put(key, bytes(key));
      expect(await store().list("files/")).toEqual(["files/a/1.txt", "files/a/2.txt", "files/b.txt"]);
      expect(await store().list("files")).toEqual(["files-old/c.txt", "files/a/1.txt", "files/a/2.txt", "files/b.txt"]);
      expect(await store().list()).toEqual(["files-old/c.txt", "files/a/1.txt", "files/a/2.txt", "files/b.txt", "other.txt"]);
      expect(await store().list("nothing/")).toEqual([]);
    });

    it("keeps a key and a longer key under it apart", async () => {
      await store().put("a", bytes("leaf"));
      await store().put("a/b", bytes("nested"));
      expect(text((await store().get("a"))?.body)).toBe("leaf");
      expect(text((await store().get("a/b"))?.body)).toBe("nested");
      await store().delete("a/b");
      expect(text((await store().get("a"))?.body)).toBe("leaf");
    });

    it("keeps keys with spaces, unicode and punctuation intact", async () => {
      const keys = ["notes/übersicht 2024.md", "runs/run:1/event#3.json", "a+b=c@d"];
      for (const key of keys) await store().put(key, bytes(key));
      for (const key of keys) expect(text((await store().get(key))?.body)).toBe(key);
      expect(await store().list()).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    });

    // UTF-8 turns a lone surrogate into U+FFFD, so a store that encodes keys can map three keys to one.
    it("refuses a key it cannot keep intact with AL_ERR_BLOB_KEY, and keeps every key it takes apart", async () => {
      const kept: string[] = [];
      for (const key of ["note-\uD800.txt", "note-\uDC00.txt", "note-\uFFFD.txt", "note-\uDE00\uD83D.txt", "a\0b", "a\\b"]) {
        const refused = await store().put(key, bytes(JSON.stringify(key))).then(() => undefined, (error: unknown) => error ?? "undefined");
        if (refused === undefined) {
          kept.push(key);
          continue;
        }
        expect(isAssemblyLineError(refused, "AL_ERR_BLOB_KEY"), `put(${JSON.stringify(key)}): ${String(refused)}`).toBe(true);
        expect(isAssemblyLineError(await store().get(key).catch((error: unknown) => error), "AL_ERR_BLOB_KEY"), `get(${JSON.stringify(key)})`).toBe(true);
      }
      for (const key of kept) expect(text((await store().get(key))?.body), `get(${JSON.stringify(key)})`).toBe(JSON.stringify(key));
      expect(await store().list()).toEqual([...kept].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    });

    it("does not share the caller's buffer", async () => {
      const body = bytes("abc");
      await store().put("copy", body);
      body[0] = 0x7a;
      const got = await store().get("copy");
      got!.body[1] = 0x7a;
      expect(text((await store().get("copy"))?.body)).toBe("abc");
    });

    it("stores the bytes as they were when put was called, even if the caller reuses its buffer before the put settles", async () => {
      const body = bytes("original");
      const pending = store().put("reused", body, { contentType: "text/plain" });
      body.fill(0x58);
      expect(await pending).toEqual({ key: "reused", size: 8 });
      expect(text((await store().get("reused"))?.body)).toBe("original");
    });

    inputRule("refuses a content type that is not header text with AL_ERR_STATE_INPUT_INVALID naming contentType, and stores nothing", async () => {
      for (const contentType of ['text/plain; name="報告.txt"', "text/plain\r\nX-Injected: 1", "text/plain\n", "application/x-ü", 5, null, { type: "text/plain" }]) {
        const label = JSON.stringify(contentType);
        const error = await store()
          .put("typed/doc.txt", bytes("x"), { contentType } as unknown as { contentType: string })
          .then(() => undefined, (caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_STATE_INPUT_INVALID"), `${label}: ${String(error)}`).toBe(true);
        expect(String(error), label).toContain("contentType");
        expect(await store().get("typed/doc.txt"), label).toBeUndefined();
      }
      expect(await store().list()).toEqual([]);
    });

    inputRule("gives back a content type without surrounding spaces, and an empty or blank one as application/octet-stream", async () => {
      const cases: [string, string][] = [
        [" text/plain ", "text/plain"],
        ["\ttext/markdown; charset=utf-8 ", "text/markdown; charset=utf-8"],
        ["", "application/octet-stream"],
        ["   ", "application/octet-stream"],
        ['text/plain; name="report.txt"', 'text/plain; name="report.txt"'],
      ];
      for (const [index, [given, expected]] of cases.entries()) {
        await store().put(`typed/${index}`, bytes("x"), { contentType: given });
        expect((await store().get(`typed/${index}`))?.contentType, JSON.stringify(given)).toBe(expected);
      }
    });

    inputRule("stores the bytes a typed array or DataView holds in memory, as for a Uint8Array over them", async () => {
      const words = new Uint16Array([0x4142, 0x4344]);
      const memory = new Uint8Array([0x10, 0x20, 0x30, 0x40, 0x50]);
      const bodies: [string, ArrayBufferView, Uint8Array][] = [
        ["words", words, new Uint8Array(words.buffer)],
        ["view", new DataView(memory.buffer, 1, 3), memory.subarray(1, 4)],
        ["floats", new Float64Array([1.5]), new Uint8Array(new Float64Array([1.5]).buffer)],
      ];
      for (const [key, body, expected] of bodies) {
        expect(await store().put(`typed/${key}`, body as Uint8Array), key).toEqual({ key: `typed/${key}`, size: expected.byteLength });
        expect(Buffer.from((await store().get(`typed/${key}`))!.body).equals(Buffer.from(expected)), key).toBe(true);
      }
    });

    inputRule("refuses a body that is not bytes with AL_ERR_STATE_INPUT_INVALID, and stores nothing", async () => {
      for (const body of ["hello", new Uint8Array([1, 2]).buffer, [1, 2], null, undefined]) {
        const label = Object.prototype.toString.call(body);
        const error = await store()
          .put("untyped", body as unknown as Uint8Array)
          .then(() => undefined, (caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_STATE_INPUT_INVALID"), `${label}: ${String(error)}`).toBe(true);
        expect(await store().get("untyped"), label).toBeUndefined();
      }
    });

    it("keeps every blob when 20 puts race", async () => {
      await Promise.all(Array.from({ length: 20 }, (_, index) => store().put(`race/${index}`, bytes(String(index)))));
      expect(await store().list("race/")).toHaveLength(20);
    });
  });
}
