import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { EncryptedGrantStore } from "../src/index.js";

const work = mkdtempSync(join(tmpdir(), "al-grant-store-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const KEY = "k".repeat(40);
let files = 0;
const freshPath = () => join(work, `grants-${(files += 1)}.json`);

describe("the encrypted grant store's file", () => {
  it("refuses to add a grant under another key than the grants it holds, leaving the file as it was", async () => {
    const path = freshPath();
    await new EncryptedGrantStore({ path, secretKey: KEY }).put("github", "ghp_token");
    const before = readFileSync(path, "utf8");
    const wrongKey = new EncryptedGrantStore({ path, secretKey: "w".repeat(40) });
    const refused = wrongKey.put("gitlab", "glpat_token");
    await expect(refused).rejects.toMatchObject({ code: "AL_ERR_GRANT_KEY", message: expect.stringMatching(/grants.put\("gitlab"\): the grants already in .* \(such as "github"\) do not decrypt with this ASSEMBLY_LINE_SECRET_KEY; nothing was written/) });
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(await new EncryptedGrantStore({ path, secretKey: KEY }).get("github")).toBe("ghp_token");
    // The one grant of a store may be stored again under a new key (a rotated key).
    await wrongKey.put("github", "ghp_rotated");
    expect(await wrongKey.get("github")).toBe("ghp_rotated");
  });

  it("refuses a file that is not a grant store with AL_ERR_GRANT_KEY naming it, and never overwrites it", async () => {
    for (const text of ["{ not json", "[]", JSON.stringify({ github: "ghp_plain" })]) {
      const path = freshPath();
      writeFileSync(path, text);
      const store = new EncryptedGrantStore({ path, secretKey: KEY });
      await expect(store.get("github")).rejects.toMatchObject({ code: "AL_ERR_GRANT_KEY", message: expect.stringContaining(`${path} is not a grant store`) });
      await expect(store.put("gitlab", "glpat_token")).rejects.toMatchObject({ code: "AL_ERR_GRANT_KEY" });
      expect(readFileSync(path, "utf8")).toBe(text);
    }
  });

  it("holds no grant named like a property every object has", async () => {
    const path = freshPath();
    const store = new EncryptedGrantStore({ path, secretKey: KEY });
    await store.put("github", "ghp_token");
    for (const id of ["constructor", "toString", "__proto__", "hasOwnProperty"]) expect(await store.get(id)).toBeUndefined();
  });

  it("keeps every grant two stores of one process write to the same file at once", async () => {
    const path = freshPath();
    const [one, two] = [new EncryptedGrantStore({ path, secretKey: KEY }), new EncryptedGrantStore({ path, secretKey: KEY })];
    await Promise.all(Array.from({ length: 20 }, (_, index) => (index % 2 ? one : two).put(`grant_${index}`, `secret-${index}`)));
    for (let index = 0; index < 20; index += 1) expect(await one.get(`grant_${index}`)).toBe(`secret-${index}`);
    expect(readdirSync(work).filter((file) => file.endsWith(".tmp"))).toEqual([]);
  });

  it("keeps every grant two processes write to the same file at once (two hosts on one volume)", async () => {
    const path = freshPath();
    const dist = resolve(import.meta.dirname, "../dist/index.js");
    // Both start writing at one moment, whenever each process got going.
    const go = Date.now() + 1_000;
    const writer = (who: string) =>
      promisify(execFile)(process.execPath, [
        "--input-type=module",
        "-e",
        `const { EncryptedGrantStore } = await import(${JSON.stringify(dist)}); const store = new EncryptedGrantStore({ path: ${JSON.stringify(path)}, secretKey: ${JSON.stringify(KEY)} }); await new Promise((go) => setTimeout(go, ${go} - Date.now())); for (let i = 0; i < 25; i += 1) await store.put("${who}_" + i, "secret-${who}-" + i);`,
      ]);
    await Promise.all([writer("a"), writer("b")]);
    const store = new EncryptedGrantStore({ path, secretKey: KEY });
    for (const who of ["a", "b"]) for (let index = 0; index < 25; index += 1) expect(await store.get(`${who}_${index}`)).toBe(`secret-${who}-${index}`);
    expect(existsSync(`${path}.lock`)).toBe(false);
  }, 30_000);

  it("takes over the lock a process left when it died holding it", async () => {
    const path = freshPath();
    // What a process that died holding the lock leaves: the lock's folder, no longer refreshed.
    mkdirSync(`${path}.lock`);
    const longAgo = new Date(Date.now() - 60_000);
    utimesSync(`${path}.lock`, longAgo, longAgo);
    const store = new EncryptedGrantStore({ path, secretKey: KEY });
    await store.put("github", "ghp_token");
    expect(await store.get("github")).toBe("ghp_token");
    expect(existsSync(`${path}.lock`)).toBe(false);
  });
});
