import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import { builtInToolDefaults, InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { filesystemOver, toolContextOver } from "./support/tool-filesystem.js";

const BOM = "\uFEFF";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A local sandbox's /workspace holding `files`, and a tool context whose runtime filesystem has it behind /workspace. */
async function workspaceWith(files: Record<string, Uint8Array>) {
  const root = mkdtempSync(join(tmpdir(), "al-read-bytes-"));
  roots.push(root);
  const sandbox = await new LocalSandboxAdapter({ root }).acquire("run-1");
  for (const [path, bytes] of Object.entries(files)) await sandbox.writeFile(path, bytes);
  const fs = filesystemOver(new InMemoryStateAdapter(), { sandbox });
  const ctx = toolContextOver(fs);
  const read = (input: { path: string; offset?: number }) => builtInToolDefaults.read.execute(input, ctx) as Promise<Record<string, unknown>>;
  return { fs, read };
}

describe("the read tool on a /workspace file that is not UTF-8", () => {
  it("refuses a binary file or another encoding with a result that names bash, instead of U+FFFD for every byte", async () => {
    const { read } = await workspaceWith({ "blob.bin": new Uint8Array(40_000).fill(0xff), "old.txt": Buffer.from("caf\u00e9", "latin1") });
    expect(await read({ path: "/workspace/blob.bin" })).toEqual({ path: "/workspace/blob.bin", error: expect.stringMatching(/^\/workspace\/blob\.bin is not UTF-8 text .* with bash \(file 'blob\.bin'/) });
    expect(await read({ path: "/workspace/old.txt" })).toEqual({ path: "/workspace/old.txt", error: expect.stringContaining("iconv -f <its encoding> -t UTF-8") });
  });
});

describe("the read tool counts a file's own bytes", () => {
  it("gives totalBytes as list sizes the file, and offsets on its bytes, a byte order mark included, showing the mark nowhere", async () => {
    const text = "é".repeat(40_000) + "tail";
    const bytes = Buffer.from(BOM + text, "utf8");
    const { fs, read } = await workspaceWith({ "big.txt": bytes });
    expect((await fs.list("/workspace/big.txt"))[0]!.size).toBe(bytes.length);
    const first = await read({ path: "/workspace/big.txt" });
    // 3 bytes of mark, then 2 a character: 65,535 falls on the first byte of one.
    const second = await read({ path: "/workspace/big.txt", offset: 65_535 });
    expect(first).toMatchObject({ offset: 0, totalBytes: bytes.length, nextOffset: 65_535 });
    expect(second).toMatchObject({ offset: 65_535, totalBytes: bytes.length, nextOffset: null });
    expect((first.content as string) + (second.content as string)).toBe(text);
  });

  it("hands back a small file whole, without its byte order mark", async () => {
    const { read } = await workspaceWith({ "small.csv": Buffer.from(`${BOM}name\nZürich\n`, "utf8") });
    expect(await read({ path: "/workspace/small.csv" })).toEqual({ path: "/workspace/small.csv", content: "name\nZürich\n" });
  });
});
