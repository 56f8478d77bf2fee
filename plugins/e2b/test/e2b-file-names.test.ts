import { afterAll, beforeAll, expect, it } from "vitest";
import { E2bSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeE2b, type FakeE2b } from "./support/fake-e2b.js";
import { e2bTemplateImage } from "./support/template-image.js";

const probe = await probeEngine("E2B file names");
/*
 * envd takes a file's path in a URL query and a multipart part's name: names holding URL, shell
 * and glob characters, whitespace other than a space, and non-ASCII text must reach the file of
 * exactly that name, and come back from listFiles as written.
 */
const NAMES = ["a+b c.txt", "100%.txt", "q?x#y&z=1.txt", 'quote"d.txt', "back\\slash.txt", "日本語 🎉.txt", "-dash.txt", "tab\tname.txt", "cr\rname.txt", "$(echo hi).txt", "`x`.txt", "*glob*.txt"];

if (probe.available) {
  const { docker } = probe;
  let fake: FakeE2b;
  beforeAll(async () => {
    fake = await startFakeE2b({ docker, templates: { base: await e2bTemplateImage(docker, (await baseImages(docker)).busybox) } });
  }, 120_000);
  afterAll(() => fake?.close());

  it("writes, reads and lists files whose names hold URL, shell and glob characters, tabs, CRs and non-ASCII text, and binary and empty content", async () => {
    const adapter = new E2bSandboxAdapter({ scope: randomScope("e2b"), hostEnv: { E2B_API_KEY: fake.apiKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl } });
    const box = await adapter.acquire("run-names");
    const failures: string[] = [];
    for (const name of NAMES) {
      try {
        await box.writeFile(`dir/${name}`, `content of ${name}`);
        const back = new TextDecoder().decode(await box.readFile(`dir/${name}`));
        if (back !== `content of ${name}`) failures.push(`${JSON.stringify(name)}: read ${JSON.stringify(back)}`);
      } catch (error) {
        failures.push(`${JSON.stringify(name)}: ${String(error).slice(0, 200)}`);
      }
    }
    const listed = (await box.listFiles("dir")).map((entry) => entry.path.slice("/workspace/dir/".length)).sort();
    const bytes = new Uint8Array(256).map((_, index) => index);
    await box.writeFile("bin", bytes);
    await box.writeFile("empty", new Uint8Array(0));
    expect([...(await box.readFile("bin"))]).toEqual([...bytes]);
    expect((await box.readFile("empty")).length).toBe(0);
    await adapter.release("run-names");
    expect(failures).toEqual([]);
    expect(listed).toEqual([...NAMES].sort());
  }, 120_000);
}
