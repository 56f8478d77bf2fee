import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { VpsDeployTarget, envFile, systemdUnit } from "../plugins/node/src/deploy/vps-deploy-target.js";
import { getJson, postJson } from "./support/agent-server.js";
import { copyExample } from "./support/example-copy.js";
import { freshDatabase } from "./support/fresh-database.js";
import { sshdInstalled, startSshd, type RunningSshd } from "./support/sshd.js";
import { s3rverInstalled, startS3rver, type RunningS3rver } from "../plugins/s3/test/support/s3rver.js";
import { freePort } from "./support/free-port.js";

const TOKEN = "vps-token-77aa";
const SECRET = "vps-secret-5e5e";
const BUCKET = "vps-blobs";


function grepTree(dir: string, needle: string): string[] {
  const hits: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) hits.push(...grepTree(path, needle));
    else if (entry.isFile() && readFileSync(path).includes(needle)) hits.push(path);
  }
  return hits;
}

describe("vps service files", () => {
  it("writes the environment file with quoted values and refuses ones it cannot hold", () => {
    expect(envFile({ DATABASE_URL: "postgres://u:p@h/db?x=$y", EMPTY: undefined }, 8080)).toBe("DATABASE_URL='postgres://u:p@h/db?x=$y'\nPORT='8080'\nNODE_ENV='production'\n");
    let error: unknown;
    try {
      envFile({ BAD: "it's" }, 1);
    } catch (caught) {
      error = caught;
    }
    expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG")).toBe(true);
    expect(String(error)).toContain("BAD");
    expect(String(error)).not.toContain("it's");
  });

  it("refuses keepReleases below 2 (the release before is the one a failed deploy rolls back to) instead of raising it silently", () => {
    for (const keepReleases of [0, 1, 2.5]) {
      let error: unknown;
      try {
        new VpsDeployTarget({ host: "203.0.113.1", keepReleases });
      } catch (caught) {
        error = caught;
      }
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG"), `${keepReleases}: ${String(error)}`).toBe(true);
      expect(String(error)).toContain(`vps keepReleases ${keepReleases} is not a whole number of at least 2`);
    }
    expect(new VpsDeployTarget({ host: "203.0.113.1", keepReleases: 2 }).name).toBe("vps");
  });

  it("renders a systemd unit that runs `assembly-line start` from the current release with the env file", () => {
    const unit = systemdUnit({ name: "support", dir: "/opt/assembly-line/support" }, ["node", "/opt/assembly-line/support/current/node_modules/@assemblyline-agents/node/bin/assembly-line.js", "start", "/opt/assembly-line/support/current/agent/.assembly-line"]);
    expect(unit).toContain("EnvironmentFile=/opt/assembly-line/support/env");
    expect(unit).toContain("ExecStart=node /opt/assembly-line/support/current/node_modules/@assemblyline-agents/node/bin/assembly-line.js start /opt/assembly-line/support/current/agent/.assembly-line");
    expect(unit).toContain("Restart=always");
  });
});

if (sshdInstalled("assembly-line deploy --target vps") && s3rverInstalled()) {
  let sshd: RunningSshd;
  let s3: RunningS3rver;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let remoteDir: string;
  let root: string;
  let agentDir: string;
  let port: number;

  beforeAll(async () => {
    sshd = await startSshd();
    s3 = await startS3rver([BUCKET]);
    database = await freshDatabase("al_vps");
    remoteDir = mkdtempSync(join(tmpdir(), "al-vps-host-"));
    ({ agentDir, root } = copyExample());
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "Hello from the VPS." }] }));
    port = await freePort();
  }, 120_000);

  afterAll(async () => {
    // The release runs detached on the "host"; this suite started it, so it stops it.
    const pidFile = remoteDir ? join(remoteDir, "service.pid") : "";
    if (pidFile && existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGTERM");
      } catch {
        // Already gone.
      }
    }
    await sshd?.stop();
    await s3?.stop();
    await database?.drop();
    for (const dir of [remoteDir, root]) if (dir) rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  const env = (overrides: Record<string, string | undefined> = {}) => ({
    DATABASE_URL: database.url,
    R2_ENDPOINT: s3.endpoint,
    R2_BUCKET: BUCKET,
    R2_ACCESS_KEY_ID: "S3RVER",
    R2_SECRET_ACCESS_KEY: SECRET,
    ASSEMBLY_LINE_BEARER_TOKEN: TOKEN,
    HOST: "127.0.0.1",
    ...overrides,
  });
  const deploy = (environment = env()) =>
    deployAgent({
      agentDir,
      target: "vps",
      name: "vps-agent",
      port,
      model: "scripted:conversations/hello.json",
      include: ["conversations"],
      // Generous: a cold `assembly-line start` on a loaded 2-core CI machine.
      readyTimeoutMs: 240_000,
      env: environment,
      vps: { host: "127.0.0.1", user: "root", sshPort: sshd.port, identityFile: sshd.identityFile, directory: remoteDir, nodePath: process.execPath, serviceManager: "process" },
    });

  describe("assembly-line deploy --target vps (a real sshd)", () => {
    let first: Awaited<ReturnType<typeof deployAgent>>;

    it("ships the release over ssh + rsync, starts it, and serves /readyz and a run; secrets only in the host's env file", async () => {
      // Runtime packages of earlier dependency sets that no release links to: one unused for a day, one uploaded a minute ago.
      const stale = join(remoteDir, "modules", "00000000000000aa");
      const recent = join(remoteDir, "modules", "00000000000000bb");
      for (const dir of [stale, recent]) mkdirSync(join(dir, "node_modules"), { recursive: true });
      const dayAgo = new Date(Date.now() - 24 * 3_600_000);
      utimesSync(stale, dayAgo, dayAgo);
      first = await deploy();
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(recent)).toBe(true);
      expect(existsSync(join(remoteDir, "releases", first.id, "node_modules", "@assemblyline-agents", "node", "package.json"))).toBe(true);
      expect(first.url).toBe(`http://127.0.0.1:${port}`);
      expect((await getJson(`${first.url}/readyz`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      const sent = await postJson(`${first.url}/message?wait=60`, { message: "hi" }, { authorization: `Bearer ${TOKEN}` });
      expect(sent.body).toMatchObject({ status: "completed", response: { text: "Hello from the VPS." } });
      expect(readFileSync(join(remoteDir, "env"), "utf8")).toContain(`R2_SECRET_ACCESS_KEY='${SECRET}'`);
      expect(statSync(join(remoteDir, "env")).mode & 0o077).toBe(0);
      expect(grepTree(join(remoteDir, "releases"), SECRET)).toEqual([]);
    }, 600_000);

    it("rolls back to the previous release when the new one never gets ready", async () => {
      writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace("briefly.", "tersely."));
      const error = await deploy(env({ DATABASE_URL: undefined })).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_UNHEALTHY"), String(error)).toBe(true);
      // The deploy waits for the previous release to answer again before it reports the rollback.
      expect(String(error)).toContain(`rolled back to ${first.id}, which answers /readyz again`);
      expect(String(error)).toContain("exited before it answered /readyz");
      expect(readlinkSync(join(remoteDir, "current"))).toBe(`releases/${first.id}`);
      const sent = await postJson(`${first.url}/message?wait=60`, { message: "still there?" }, { authorization: `Bearer ${TOKEN}` });
      expect(sent.body).toMatchObject({ status: "completed", response: { text: "Hello from the VPS." } });
    }, 600_000);
  });
}
