import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
});
