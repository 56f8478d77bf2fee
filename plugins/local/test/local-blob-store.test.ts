import { describeBlobStoreConformance } from "@assemblyline-agents/core/testkit";
import { readlinkSync } from "node:fs";
import { mkdir, mkdtemp, open, readdir, rm, truncate, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LocalBlobStore } from "../src/index.js";

describeBlobStoreConformance("LocalBlobStore", async () => {
  const directory = await mkdtemp(join(tmpdir(), "al-blob-kit-"));
  return { state: new LocalBlobStore({ directory }), cleanup: () => rm(directory, { recursive: true, force: true }) };
});

const folders: string[] = [];
async function store(): Promise<{ blobs: LocalBlobStore; root: string; directory: string }> {
  const root = await mkdtemp(join(tmpdir(), "al-blob-"));
  folders.push(root);
  const directory = join(root, "blobs");
  return { blobs: new LocalBlobStore({ directory }), root, directory };
}
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

async function allFiles(folder: string): Promise<string[]> {
  return (await readdir(folder, { recursive: true })).map(String);
}

describe("LocalBlobStore", () => {
  it("defaults to .assembly-line/blobs under the agent folder", () => {
    expect(new LocalBlobStore({ agentDir: "/srv/agent" }).directory).toBe("/srv/agent/.assembly-line/blobs");
  });

  it.each([
    ["../escape", "a parent segment"],
    ["a/../../escape", "a parent segment inside the key"],
    ["/etc/passwd", "an absolute path"],
    ["a//b", "an empty segment"],
    ["./a", "a dot segment"],
    ["a/", "a trailing slash"],
    ["..\\escape", "a backslash"],
    ["a\0b", "a NUL byte"],
    ["", "an empty key"],
    ["note-\uD800.txt", "a lone high surrogate"],
    ["notes/\uDC00/a.txt", "a lone low surrogate"],
    ["note-\uDE00\uD83D.txt", "surrogates in the wrong order"],
  ])("refuses the key %j (%s) with AL_ERR_BLOB_KEY", async (key) => {
    const { blobs, root } = await store();
    for (const call of [() => blobs.put(key, new Uint8Array([1])), () => blobs.get(key), () => blobs.delete(key)]) {
      await expect(call()).rejects.toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_BLOB_KEY" });
    }
    expect(await readdir(root)).toEqual([]);
  });

  it("writes every blob inside its folder, whatever characters the key holds", async () => {
    const { blobs, root, directory } = await store();
    for (const key of ["%2E%2E/x", "..%2Fx", "...", "a/.../b", "~/x", "C:/x", "a@blob/b"]) await blobs.put(key, new Uint8Array([1]));
    expect(await readdir(root)).toEqual(["blobs"]);
    expect((await allFiles(directory)).every((path) => !path.split("/").includes(".."))).toBe(true);
    expect(await blobs.list()).toEqual(["%2E%2E/x", "..%2Fx", "...", "C:/x", "a/.../b", "a@blob/b", "~/x"]);
  });

  it("keeps a key with U+FFFD or an astral character apart from keys UTF-8 cannot encode", async () => {
    const { blobs } = await store();
    await blobs.put("note-\uFFFD.txt", new TextEncoder().encode("replacement"));
    await blobs.put("note-\uD83D\uDE00.txt", new TextEncoder().encode("smile"));
    await expect(blobs.put("note-\uD800.txt", new TextEncoder().encode("lone"))).rejects.toMatchObject({ code: "AL_ERR_BLOB_KEY" });
    await expect(blobs.get("note-\uDC00.txt")).rejects.toMatchObject({ code: "AL_ERR_BLOB_KEY" });
    expect(new TextDecoder().decode((await blobs.get("note-\uFFFD.txt"))?.body)).toBe("replacement");
    expect(await blobs.list()).toEqual(["note-\uD83D\uDE00.txt", "note-\uFFFD.txt"]);
  });

  it("refuses a key whose segment is too long for a file name, naming the limit", async () => {
    const { blobs } = await store();
    await expect(blobs.put("x".repeat(300), new Uint8Array(1))).rejects.toMatchObject({ code: "AL_ERR_BLOB_KEY" });
    // 67 "é" are 134 UTF-8 bytes, each encoded as %XX: a 402-character file name.
    await expect(blobs.put("\u00e9".repeat(67), new Uint8Array(1))).rejects.toMatchObject({ code: "AL_ERR_BLOB_KEY", message: expect.stringContaining("402-character file name") });
  });

  it("refuses a key whose encoded path is longer than Linux allows, naming the limit, where it failed with ENAMETOOLONG", async () => {
    const { blobs, root } = await store();
    // 747 characters, under the 1024-character limit; each segment encodes to 198 characters, the whole to some 4,400.
    const key = Array.from({ length: 22 }, () => "\u00e9".repeat(33)).join("/");
    for (const call of [() => blobs.put(key, new Uint8Array([1])), () => blobs.get(key), () => blobs.delete(key)]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error, String(error)).toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_BLOB_KEY", message: expect.stringContaining("over the 4095 bytes") });
    }
    expect(await readdir(root)).toEqual([]);
    // The same segments, fewer of them, fit.
    await blobs.put(Array.from({ length: 4 }, () => "\u00e9".repeat(33)).join("/"), new Uint8Array([1]));
    expect(await blobs.list()).toHaveLength(1);
  });

  it("keeps keys that differ only in case apart, on a case-insensitive file system too (no two names differ only in case)", async () => {
    const { blobs, directory } = await store();
    const keys = ["files/Report.pdf", "files/report.pdf", "FILES/report.pdf", "files/REPORT.PDF"];
    for (const [index, key] of keys.entries()) await blobs.put(key, new Uint8Array([index]));
    // macOS and Windows fold case: two paths equal once lower-cased would be one file there.
    const paths = await allFiles(directory);
    expect(new Set(paths.map((path) => path.toLowerCase())).size).toBe(paths.length);
    for (const [index, key] of keys.entries()) expect((await blobs.get(key))?.body).toEqual(new Uint8Array([index]));
    expect(await blobs.list()).toEqual([...keys].sort());
  });

  it("reads, lists, replaces and deletes a blob an earlier version kept under its upper-case name", async () => {
    const { blobs, directory } = await store();
    await writeEarlierBlob(directory, ["Files", "Report.pdf"], "application/pdf", [1, 2]);
    await writeEarlierBlob(directory, ["Old", "Notes.txt"], "text/plain", [3]);
    expect(await blobs.get("Files/Report.pdf")).toEqual({ body: new Uint8Array([1, 2]), contentType: "application/pdf" });
    expect(await blobs.get("files/report.pdf")).toBeUndefined();
    expect(await blobs.list()).toEqual(["Files/Report.pdf", "Old/Notes.txt"]);
    await blobs.put("Files/Report.pdf", new Uint8Array([9]), { contentType: "application/pdf" });
    expect(await blobs.get("Files/Report.pdf")).toEqual({ body: new Uint8Array([9]), contentType: "application/pdf" });
    expect(await blobs.list()).toEqual(["Files/Report.pdf", "Old/Notes.txt"]);
    await blobs.delete("Old/Notes.txt");
    expect(await blobs.get("Old/Notes.txt")).toBeUndefined();
    // The earlier names are gone, folders and all.
    expect((await allFiles(directory)).sort()).toEqual(["%46iles", "%46iles/%52eport.pdf@blob"]);
  });

  it("still reads and deletes an earlier version's blob whose key is now too long to put", async () => {
    const { blobs, directory } = await store();
    // 100 upper-case letters: a 100-character name before, 300 now (each takes 3), over the 200 allowed.
    const key = `files/${"A".repeat(100)}`;
    await writeEarlierBlob(directory, ["files", "A".repeat(100)], "text/plain", [7]);
    expect((await blobs.get(key))?.body).toEqual(new Uint8Array([7]));
    await expect(blobs.put(key, new Uint8Array([8]))).rejects.toMatchObject({ code: "AL_ERR_BLOB_KEY", message: expect.stringContaining("300-character file name") });
    await blobs.delete(key);
    expect(await blobs.get(key)).toBeUndefined();
    expect(await allFiles(directory)).toEqual([]);
  });

  it("removes folders a delete leaves empty, and keeps the rest", async () => {
    const { blobs, directory } = await store();
    await blobs.put("a/b/c", new Uint8Array([1]));
    await blobs.put("a/d", new Uint8Array([1]));
    await blobs.delete("a/b/c");
    expect(await allFiles(directory)).toEqual(["a", "a/d@blob"]);
  });

  // A power loss cannot be staged here; what it needs is seen instead: the folder the delete changed is fsynced (Linux names a handle's path under /proc).
  it.runIf(process.platform === "linux")("fsyncs the innermost folder a delete leaves, so a deleted blob does not come back after a power loss", async () => {
    const { blobs, directory } = await store();
    await blobs.put("a/b/c", new Uint8Array([1]));
    await blobs.put("a/d", new Uint8Array([1]));
    await blobs.put("e/f", new Uint8Array([1]));
    const handle = await open(directory, "r");
    const fileHandle = Object.getPrototypeOf(handle) as { sync(this: { fd: number }): Promise<void> };
    await handle.close();
    const synced: string[] = [];
    const sync = vi.spyOn(fileHandle, "sync").mockImplementation(async function (this: { fd: number }) {
      synced.push(readlinkSync(`/proc/self/fd/${this.fd}`));
    });
    try {
      await blobs.delete("a/b/c");
      expect(synced).toEqual([join(directory, "a")]);
      synced.length = 0;
      await blobs.delete("e/f");
      expect(synced).toEqual([directory]);
    } finally {
      sync.mockRestore();
    }
    expect(await allFiles(directory)).toEqual(["a", "a/d@blob"]);
  });

  it("leaves files it did not write out of list", async () => {
    const { blobs, directory } = await store();
    await blobs.put("kept", new Uint8Array([1]));
    await writeFile(join(directory, "README"), "not a blob");
    await mkdir(join(directory, "bad%zz"), { recursive: true });
    await writeFile(join(directory, "bad%zz", "x@blob"), "");
    expect(await blobs.list()).toEqual(["kept"]);
  });

  it("refuses to read a file that is not in the blob format", async () => {
    const { blobs, directory } = await store();
    await mkdir(directory, { recursive: true });
    await writeFile(join(directory, "hand-made@blob"), "hello");
    await expect(blobs.get("hand-made")).rejects.toMatchObject({ code: "AL_ERR_STATE_ROW_INVALID" });
  });

  it("refuses a body larger than it can read back, naming the limit, and stores nothing", async () => {
    const { blobs, directory } = await store();
    // A real 2 GiB buffer costs 2 GiB (or fails to allocate) on a small CI machine: this one says it has
    // 2 GiB and holds one byte. The store must refuse it by its length, before copying or writing it.
    const body = Object.defineProperty(new Uint8Array(1), "byteLength", { value: 2 ** 31 });
    const error = await blobs.put("videos/recording.mp4", body, { contentType: "video/mp4" }).catch((caught: unknown) => caught);
    expect(error, String(error)).toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(`is ${2 ** 31} bytes`) });
    expect(await blobs.list()).toEqual([]);
    expect(await allFiles(directory).catch(() => [])).toEqual([]);
  });

  it("reports a blob file too large to read as AL_ERR_STATE_ROW_INVALID instead of a bare RangeError", async () => {
    const { blobs, directory } = await store();
    await blobs.put("videos/old.mp4", new Uint8Array([1]), { contentType: "video/mp4" });
    // As an older version could write it: a sparse file just over 2 GiB, which takes no disk space.
    await truncate(join(directory, "videos", "old.mp4@blob"), 2 ** 31 + 16);
    await expect(blobs.get("videos/old.mp4")).rejects.toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_STATE_ROW_INVALID", message: expect.stringContaining("larger than") });
    await blobs.delete("videos/old.mp4");
    expect(await blobs.list()).toEqual([]);
  });

  it("removes a temp file a crashed put left behind, so deleting the last blob removes its folder", async () => {
    const { directory } = await store();
    const first = new LocalBlobStore({ directory });
    await first.put("reports/q1.pdf", new Uint8Array([1]));
    // What a process killed mid-put leaves: a temp file beside the blob, last written two hours ago.
    const leftover = join(directory, "reports", "q1.pdf@blob@tmp-0123456789ab");
    await writeFile(leftover, "half a blob");
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(leftover, twoHoursAgo, twoHoursAgo);
    // The process starts again with a new store.
    const blobs = new LocalBlobStore({ directory });
    expect(await blobs.list()).toEqual(["reports/q1.pdf"]);
    await blobs.delete("reports/q1.pdf");
    expect(await allFiles(directory)).toEqual([]);
  });

  it("removes a stale temp file when a put reaches its folder, and leaves a fresh one a put may still be writing", async () => {
    const { directory } = await store();
    await mkdir(join(directory, "inbox"), { recursive: true });
    const stale = join(directory, "inbox", "a.txt@blob@tmp-0123456789ab");
    const fresh = join(directory, "inbox", "b.txt@blob@tmp-ba9876543210");
    await writeFile(stale, "dead put");
    await writeFile(fresh, "live put");
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(stale, twoHoursAgo, twoHoursAgo);
    const blobs = new LocalBlobStore({ directory });
    await blobs.put("inbox/c.txt", new Uint8Array([1]));
    expect((await allFiles(directory)).sort()).toEqual(["inbox", "inbox/b.txt@blob@tmp-ba9876543210", "inbox/c.txt@blob"]);
  });

  it("survives puts and deletes racing in the same folder", async () => {
    const { blobs } = await store();
    await Promise.all(
      Array.from({ length: 40 }, async (_, index) => {
        await blobs.put(`dir/${index}`, new Uint8Array([index]));
        if (index % 2 === 0) await blobs.delete(`dir/${index}`);
      }),
    );
    expect(await blobs.list("dir/")).toHaveLength(20);
  });

  it("keeps a put whose folder a concurrent delete is removing, instead of failing with ENOENT", async () => {
    const { blobs } = await store();
    // The delete empties d<n>/e and removes it and d<n> while the puts make their folders under
    // them; the interleaving is up to the filesystem, so try it many times.
    const failures: unknown[] = [];
    for (let round = 0; round < 300; round += 1) {
      await blobs.put(`d${round}/e/old`, new Uint8Array([1]));
      const results = await Promise.allSettled([blobs.delete(`d${round}/e/old`), blobs.put(`d${round}/e/new`, new Uint8Array([2])), blobs.put(`d${round}/f/new`, new Uint8Array([3]))]);
      for (const result of results) if (result.status === "rejected") failures.push(result.reason);
      expect(await blobs.get(`d${round}/e/new`), `round ${round}`).toBeDefined();
      expect(await blobs.get(`d${round}/f/new`), `round ${round}`).toBeDefined();
    }
    expect(failures).toEqual([]);
  }, 60_000);
});

/** A blob file as versions before case-safe names wrote it: upper-case letters kept in its names. */
async function writeEarlierBlob(directory: string, names: string[], contentType: string, body: number[]): Promise<void> {
  const folder = join(directory, ...names.slice(0, -1));
  await mkdir(folder, { recursive: true });
  const header = Buffer.from(JSON.stringify({ contentType }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(header.length);
  await writeFile(join(folder, `${names[names.length - 1]}@blob`), Buffer.concat([length, header, Buffer.from(body)]));
}
