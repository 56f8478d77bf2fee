import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_DATABASE_URL, probeDatabase, randomSchema, testPool } from "../plugins/postgres/test/support/database.js";
// @ts-expect-error: a plain ESM script shared with `npm run check:packages`, no types.
import { ROOT, packWorkspaces, publishedWorkspaces } from "../scripts/workspaces.mjs";

/**
 * What a user outside this repository gets: every published workspace packed
 * once with `npm pack` (prepack builds it), installed once from the tarballs
 * into a fresh folder under the OS temp dir, and used there only through the
 * installed packages and the installed `assembly-line` bin.
 */
interface Packed {
  name: string;
  tarball: string;
}

const database = await probeDatabase("pack-install");
const schema = randomSchema("al_pack");
const INSTALL_TIMEOUT = 15 * 60_000;
/** npm installs vitest and verify runs the blob kit twice: minutes on a busy machine. */
const SCAFFOLD_TIMEOUT = 10 * 60_000;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

const run = (command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Outcome> =>
  promisify(execFile)(command, args, { cwd, env: { ...process.env, ASSEMBLY_LINE_LOG_LEVEL: "error", npm_config_prefer_offline: "true", ...env }, maxBuffer: 32 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: typeof error.code === "number" ? error.code : 1, stdout: error.stdout ?? "", stderr: error.stderr ?? String(error) }),
  );

describe("the published packages, installed from their tarballs outside the workspace", () => {
  let work: string;
  let app: string;
  let packed: Packed[];
  const cli = (args: string[], env: Record<string, string> = {}) => run(process.execPath, [join(app, "node_modules/.bin/assembly-line"), ...args], app, env);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "al-pack-"));
    packed = packWorkspaces(join(work, "tarballs")) as Packed[];
    app = join(work, "app");
    cpSync(join(ROOT, "examples/notes-agent"), join(app, "notes-agent"), { recursive: true, filter: (source) => !source.includes(".assembly-line") });
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "pack-install-app", private: true, type: "module" }));
    // typescript builds the scaffolded plugin; vitest is left out on purpose: verify must say how to get it.
    const installed = await run("npm", ["install", "--no-audit", "--no-fund", ...packed.map((entry) => entry.tarball), "typescript@~5.9.3", "@types/node@^20.19.0"], app);
    if (installed.code !== 0) throw new Error(`npm install of the tarballs failed:\n${installed.stderr}`);
  }, INSTALL_TIMEOUT);

  afterAll(async () => {
    if (work) rmSync(work, { recursive: true, force: true });
    if (database.available) {
      const pool = testPool();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  }, 5 * 60_000);

  it("packs every published workspace and installs each from its tarball, not from the workspace", () => {
    expect(packed.map((entry) => entry.name).sort()).toEqual((publishedWorkspaces() as Packed[]).map((entry) => entry.name).sort());
    for (const { name } of packed) {
      const dir = join(app, "node_modules", name);
      expect(existsSync(join(dir, "package.json")), name).toBe(true);
      expect(realpathSync(dir).startsWith(ROOT), `${name} resolves into the workspace`).toBe(false);
      expect(existsSync(join(dir, "LICENSE")) && existsSync(join(dir, "README.md")), `${name} ships LICENSE and README.md`).toBe(true);
    }
  });

  it("type-checks a user's file with skipLibCheck false: a runtime Kernel is a PluginKernel, and the adapters' options are typed by their clients' types", async () => {
    const dir = join(app, "types-check");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, skipLibCheck: false, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext", types: ["node"] }, files: ["check.ts"] }));
    writeFileSync(
      join(dir, "check.ts"),
      `import type { PluginKernel } from "@assemblyline-agents/core";
import { createKernel } from "@assemblyline-agents/runtime";
import { postgresState } from "@assemblyline-agents/postgres";
import { dockerSandbox } from "@assemblyline-agents/docker";

// Whatever tapable npm installed (2.3.5 types a waterfall tap as returning R | undefined).
export const kernel: PluginKernel = await createKernel();
export const sandbox = dockerSandbox({ image: "node:20", network: "none" });
// @ts-expect-error: pool is a pg Pool (from @types/pg), so a string is refused rather than typed any.
export const state = postgresState({ pool: "not a pool" });
`,
    );
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "types-check", private: true, type: "module" }));
    const checked = await run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", dir], app);
    expect(checked.stdout + checked.stderr).toBe("");
    expect(checked.code).toBe(0);
  }, 2 * 60_000);

  it("builds and runs an agent through the installed CLI", async () => {
    const built = await cli(["build", "notes-agent"]);
    expect(built.stderr).toBe("");
    expect(built.stdout).toMatch(/agentRevision rev_[0-9a-f]{32}/);
    const ran = await cli(["run", "notes-agent", "--message", "Remember to buy milk", "--model", "scripted:notes-agent/conversations/remember-milk.json", "--approve", "all"]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("Buy milk on the way home");
    expect(ran.stdout).toMatch(/completed/);
  });

  it.skipIf(!database.available)("composes a gateway with the installed postgres plugin, and the run is kept in PostgreSQL", async () => {
    const agent = join(app, "pg-agent");
    cpSync(join(app, "notes-agent"), agent, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
    writeFileSync(
      join(agent, "gateway.ts"),
      `import { defineGateway } from "@assemblyline-agents/core";
import { postgresState } from "@assemblyline-agents/postgres";

export default defineGateway({ state: postgresState({ connectionString: ${JSON.stringify(TEST_DATABASE_URL)}, schema: ${JSON.stringify(schema)} }) });
`,
    );
    const ran = await cli(["run", "pg-agent", "--message", "Remember to buy milk", "--model", "scripted:pg-agent/conversations/remember-milk.json", "--approve", "all"]);
    expect(ran.code, ran.stderr).toBe(0);
    const pool = testPool();
    try {
      const { rows } = await pool.query<{ status: string }>(`SELECT status FROM ${schema}.runs`);
      expect(rows).toEqual([{ status: "completed" }]);
    } finally {
      await pool.end();
    }
  }, 5 * 60_000);

  it("scaffolds a plugin whose verify names the missing runner, fails on the stubs, and passes once implemented", async () => {
    const created = await cli(["plugins", "new", "@acme/assembly-line-mem-blob", "--slot", "blob", "--dir", "mem-blob"]);
    expect(created.code, created.stderr).toBe(0);
    const plugin = join(app, "mem-blob");
    const build = () => run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", plugin], app);
    expect((await build()).stdout).toBe("");

    const noRunner = await cli(["plugins", "verify", "mem-blob"]);
    expect(noRunner.code).toBe(1);
    expect(noRunner.stdout, noRunner.stderr).toContain("pass  options and live contracts");
    expect(noRunner.stdout).toContain("no vitest is installed");
    const command = /fix: (cd .+ && npm install --save-dev vitest@\S+)/.exec(noRunner.stdout)?.[1];
    expect(command, noRunner.stdout).toBeDefined();
    const installed = await run("bash", ["-c", command!], app);
    expect(installed.code, installed.stderr).toBe(0);

    const stubs = await cli(["plugins", "verify", "mem-blob"]);
    expect(stubs.code).toBe(1);
    expect(stubs.stdout).toContain("running describeBlobStoreConformance");
    expect(stubs.stdout).toMatch(/FAIL {2}conformance blob "mem-blob" \(blob@1\) with describeBlobStoreConformance: 0 passed, \d+ failed/);
    expect(stubs.stdout).toContain("MemBlobBlobStore.put is not implemented yet");

    writeFileSync(join(plugin, "src/blob-store.ts"), MEMORY_BLOB_STORE);
    expect((await build()).stdout).toBe("");
    const passed = await cli(["plugins", "verify", "mem-blob"]);
    expect(passed.stdout + passed.stderr).toContain("verify passed: @acme/assembly-line-mem-blob@0.1.0 (plugin mem-blob) is ready to publish");
    expect(passed.code).toBe(0);
  }, SCAFFOLD_TIMEOUT);

  it("scaffolds every other kind; each builds, and its verify runs the kit and names the file to write", async () => {
    const kinds = { state: "state", sandbox: "sandbox-adapter", scheduler: "scheduler", deploy: "deploy-target", runtime: "host", harness: "harness", channel: "channel", "telemetry-sink": "sink" };
    for (const [kind, file] of Object.entries(kinds)) {
      const created = await cli(["plugins", "new", `@acme/assembly-line-kit-${kind}`, "--slot", kind, "--dir", `kit-${kind}`]);
      expect(created.code, created.stderr).toBe(0);
      const built = await run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", join(app, `kit-${kind}`)], app);
      expect(built.stdout, kind).toBe("");
      const verified = await cli(["plugins", "verify", `kit-${kind}`]);
      expect(verified.code, kind).toBe(1);
      expect(verified.stdout, `${kind}: ${verified.stderr}`).toContain("pass  options and live contracts");
      expect(verified.stdout, kind).toMatch(/FAIL {2}conformance .* with describe\w+Conformance: \d+ passed, [1-9]\d* failed/);
      expect(verified.stdout, kind).toContain(`is not implemented yet: write it in src/${file}.ts`);
    }
  }, SCAFFOLD_TIMEOUT);

  // Last: it removes the Pi engine from the install.
  it("runs without the Pi engine (npm install --omit=optional), and a real-model run names the command that installs it", async () => {
    rmSync(join(app, "node_modules/@assemblyline-agents/pi"), { recursive: true, force: true });
    const scripted = await cli(["run", "notes-agent", "--message", "Remember to buy milk", "--model", "scripted:notes-agent/conversations/remember-milk.json", "--approve", "all"]);
    expect(scripted.code, scripted.stderr).toBe(0);
    expect(scripted.stdout).toContain("Buy milk on the way home");
    const real = await cli(["run", "notes-agent", "--message", "Remember to buy milk"], { OPENAI_API_KEY: "sk-not-used" });
    expect(real.code).not.toBe(0);
    expect(real.stdout + real.stderr).toContain("AL_ERR_HARNESS");
    expect(real.stdout + real.stderr).toContain("npm install @assemblyline-agents/pi");
  }, 5 * 60_000);
});

/** What a plugin author writes in place of the skeleton: a BlobStore in memory. */
const MEMORY_BLOB_STORE = `import { blobBodyBytes, blobContentType, type BlobStore } from "@assemblyline-agents/core";

export interface MemBlobBlobStoreOptions {}

export class MemBlobBlobStore implements BlobStore {
  private readonly blobs = new Map<string, { body: Uint8Array; contentType: string }>();
  constructor(readonly options: MemBlobBlobStoreOptions = {}) {}
  async close(): Promise<void> {}
  async put(key: string, body: Uint8Array, options?: { contentType?: string }) {
    // Core's rules for the body and content type, so a blob moves between stores.
    const bytes = new Uint8Array(blobBodyBytes(key, body));
    this.blobs.set(key, { body: bytes, contentType: blobContentType(key, options?.contentType) });
    return { key, size: body.byteLength };
  }
  async get(key: string) {
    const blob = this.blobs.get(key);
    return blob ? { body: new Uint8Array(blob.body), contentType: blob.contentType } : undefined;
  }
  async delete(key: string) {
    this.blobs.delete(key);
  }
  async list(prefix = "") {
    return [...this.blobs.keys()].filter((key) => key.startsWith(prefix)).sort();
  }
}
`;
