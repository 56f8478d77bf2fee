import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PI_HARNESS_NAME } from "@assemblyline-agents/pi";
import { PI_ENGINE_NAME, defaultPiHarness, importEngine } from "../src/pi-engine.js";

const cliMain = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));

/** Every module URL that importing `file` resolves, from a resolve hook in a fresh process. */
function modulesImportedBy(file: string): string[] {
  const hooks = `export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write("RESOLVED " + r.url + "\\n"); return r; }`;
  const source = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)}); await import(${JSON.stringify(file)});`;
  const traced = spawnSync(process.execPath, ["--input-type=module", "-e", source], { encoding: "utf8" });
  expect(traced.status, traced.stderr).toBe(0);
  return traced.stderr.split("\n").filter((line) => line.startsWith("RESOLVED ")).map((line) => line.slice("RESOLVED ".length));
}

describe("the model engine loads when a run needs it", () => {
  it("imports the command line without the Pi engine, pi-ai or any provider SDK", () => {
    const modules = modulesImportedBy(cliMain);
    expect(modules.some((url) => url.includes("/plugins/node/dist/cli/main.js"))).toBe(true);
    const heavy = modules.filter((url) => /\/(plugins\/pi\/|@mariozechner\/pi-ai\/|typebox\/|openai\/|@anthropic-ai\/|@google\/genai\/|@mistralai\/)/.test(url));
    expect(heavy).toEqual([]);
  });

  it("names the lazy engine as the Pi engine names itself, so paused runs resume on it", async () => {
    expect(PI_ENGINE_NAME).toBe(PI_HARNESS_NAME);
    expect((await defaultPiHarness()).name).toBe(PI_HARNESS_NAME);
  });

  it("checks a host's declared models when it starts, not at the first run", async () => {
    await expect(defaultPiHarness({ "nowhere/unknown-model": { baseUrl: "http://127.0.0.1:9/v1", api: "not-an-api" as never } })).rejects.toMatchObject({ code: "AL_ERR_MODEL_UNKNOWN" });
  });
});

describe("an engine package that is not installed", () => {
  it("fails the run with AL_ERR_HARNESS naming the npm install command, not a module-not-found stack", async () => {
    const failure = await importEngine("@assemblyline-agents/engine-that-is-not-installed").catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "AL_ERR_HARNESS", fix: expect.stringContaining("npm install @assemblyline-agents/engine-that-is-not-installed") });
  });

  it("passes on an error from inside an installed engine as it is", async () => {
    // The package resolves; the subpath does not exist in its exports map: a different failure, not "not installed".
    await expect(importEngine("@assemblyline-agents/pi/no-such-entry")).rejects.not.toMatchObject({ code: "AL_ERR_HARNESS" });
  });
});
