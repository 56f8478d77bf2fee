import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError, type AssemblyLineError } from "@assemblyline-agents/core";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { getJson, postJson } from "./support/agent-server.js";
import { copyExample } from "./support/example-copy.js";
import { freshDatabase } from "./support/fresh-database.js";
import { s3rverInstalled, startS3rver, type RunningS3rver } from "../plugins/s3/test/support/s3rver.js";
import { freePort } from "./support/free-port.js";

/*
 * The vps target's systemd path against a real systemd: a Debian container
 * running systemd as PID 1 with OpenSSH (.ci/services/systemd-image.sh builds
 * the image). It shares the host's network, so the release reaches this
 * machine's PostgreSQL and S3 server on 127.0.0.1 and its port answers here.
 */
const IMAGE = "assembly-line-test/systemd:bookworm";
const SUITE = "assembly-line deploy --target vps (systemd)";
const TOKEN = "vps-systemd-token-31c1";
// `$` and `\` must reach the process literally through systemd's EnvironmentFile.
const SECRET = "vps-$ecret-\\x-9d9d";
const BUCKET = "vps-systemd-blobs";
const NAME = "vps-sd-agent";
const UNIT = `assembly-line-${NAME}`;

function docker(args: string[]): { code: number; stdout: string; stderr: string } {
  const result = spawnSync("docker", args, { encoding: "utf8" });
  return { code: result.status ?? 1, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
}

/** What keeps the suite from running (undefined: nothing); in CI any of it fails the suite. */
function systemdImageMissing(): string | undefined {
  const missing = docker(["version", "--format", "{{.Server.Version}}"]).code !== 0 ? "the Docker engine does not answer (.ci/services/docker.sh)" : docker(["image", "inspect", IMAGE]).code !== 0 ? `the image ${IMAGE} is missing (.ci/services/systemd-image.sh builds it)` : !s3rverInstalled() ? "s3rver is not installed" : undefined;
  if (missing && process.env.CI) throw new Error(`${SUITE}: ${missing}; CI requires it`);
  return missing;
}


const missing = systemdImageMissing();
describe.skipIf(missing !== undefined)(`${SUITE}${missing ? `: skipped, ${missing}` : ""}`, () => {
  const container = `al-vps-systemd-${randomBytes(4).toString("hex")}`;
  let started = false;
  let keys: string;
  let sshPort: number;
  let port: number;
  let s3: RunningS3rver;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let root: string;
  let agentDir: string;

  /** A command inside the container, as its own shell sees it (not over ssh: an independent view). */
  const inside = (script: string) => docker(["exec", container, "sh", "-c", script]);
  const unitShow = (property: string) => inside(`systemctl show -p ${property} --value ${UNIT}`).stdout.trim();

  beforeAll(async () => {
    keys = mkdtempSync(join(tmpdir(), "al-vps-systemd-"));
    sshPort = await freePort();
    port = await freePort();
    mkdirSync(join(keys, "sshd"));
    mkdirSync(join(keys, "ssh"), { mode: 0o700 });
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(keys, "client_key")]);
    writeFileSync(join(keys, "ssh", "authorized_keys"), readFileSync(join(keys, "client_key.pub")));
    chmodSync(join(keys, "ssh", "authorized_keys"), 0o600);
    writeFileSync(join(keys, "sshd", "port.conf"), [`Port ${sshPort}`, "ListenAddress 127.0.0.1", "PasswordAuthentication no", "PermitRootLogin prohibit-password", ""].join("\n"));
    // Not --privileged (this sandbox withholds CAP_SYS_RESOURCE, which runc then fails to apply):
    // SYS_ADMIN and the host's cgroup tree are what systemd needs as PID 1 here.
    const run = docker([
      "run", "-d", "--name", container,
      "--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
      "--network", "host", "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
      "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
      "-v", `${join(keys, "sshd")}:/etc/ssh/sshd_config.d:ro`,
      "-v", `${join(keys, "ssh")}:/root/.ssh:ro`,
      "-v", `${process.execPath}:/usr/local/bin/node:ro`,
      IMAGE,
    ]);
    if (run.code !== 0) throw new Error(`docker run ${IMAGE} failed: ${run.stderr}`);
    started = true;
    // Until systemd has its bus up, systemctl prints nothing or "offline"; then --wait blocks until boot ends.
    const notUpYet = (state: string) => state === "" || state === "offline";
    let booted = inside("systemctl is-system-running --wait");
    for (let attempt = 0; attempt < 120 && notUpYet(booted.stdout.trim()); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      booted = inside("systemctl is-system-running --wait");
    }
    if (booted.stdout.trim() !== "running") throw new Error(`systemd in ${container} is ${booted.stdout.trim()}:\n${inside("systemctl --failed --no-pager").stdout}`);
    s3 = await startS3rver([BUCKET]);
    database = await freshDatabase("al_vps_systemd");
    ({ agentDir, root } = copyExample());
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "Hello from systemd." }] }));
  }, 120_000);

  afterAll(async () => {
    if (started) docker(["rm", "-f", "-v", container]);
    await s3?.stop();
    await database?.drop();
    for (const dir of [keys, root]) if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

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
  // No --service-manager and no --node: the target finds systemd and node on the host itself.
  const deploy = (environment = env(), name = NAME, on = port, nodePath?: string) =>
    deployAgent({
      agentDir,
      target: "vps",
      name,
      port: on,
      model: "scripted:conversations/hello.json",
      include: ["conversations"],
      readyTimeoutMs: 120_000,
      env: environment,
      vps: { host: "127.0.0.1", user: "root", sshPort, identityFile: join(keys, "client_key"), sshOptions: ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"], ...(nodePath ? { nodePath } : {}) },
    });
  const ask = async (url: string, message: string) => (await postJson(`${url}/message?wait=60`, { message }, { authorization: `Bearer ${TOKEN}` })).body;

  describe("against a real systemd as PID 1", () => {
    let first: Awaited<ReturnType<typeof deployAgent>>;

    it("installs and starts an enabled unit that real systemd runs with the release's environment; /readyz and a run answer", async () => {
      first = await deploy();
      expect(first).toMatchObject({ url: `http://127.0.0.1:${port}` });
      expect(inside(`systemctl is-active ${UNIT}`).stdout.trim()).toBe("active");
      expect(inside(`systemctl is-enabled ${UNIT}`).stdout.trim()).toBe("enabled");
      // `node` was found on the host's PATH over ssh and written as an absolute path.
      expect(unitShow("ExecStart")).toContain("argv[]=/usr/local/bin/node /opt/assembly-line/");
      expect(inside(`readlink /opt/assembly-line/${NAME}/current`).stdout.trim()).toBe(`releases/${first.id}`);
      expect((await getJson(`${first.url}/readyz`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      expect(await ask(first.url!, "hi")).toMatchObject({ status: "completed", response: { text: "Hello from systemd." } });
      // The unit's process got the env file's values byte for byte.
      const environ = inside(`tr '\\0' '\\n' < /proc/${unitShow("MainPID")}/environ`).stdout.split("\n");
      expect(environ).toContain(`R2_SECRET_ACCESS_KEY=${SECRET}`);
      expect(environ).toContain(`PORT=${port}`);
    }, 300_000);

    it("is restarted by systemd when the release's process dies", async () => {
      const pid = unitShow("MainPID");
      expect(Number(pid)).toBeGreaterThan(0);
      inside(`kill -9 ${pid}`);
      let ready = false;
      for (let attempt = 0; attempt < 120 && !ready; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        ready = unitShow("MainPID") !== pid && (await getJson(`${first.url}/readyz`, { authorization: `Bearer ${TOKEN}` }).catch(() => ({ status: 0 }))).status === 200;
      }
      expect(ready).toBe(true);
      expect(Number(unitShow("NRestarts"))).toBeGreaterThanOrEqual(1);
    }, 120_000);

    it("deploys over a release that crashed and that systemd is waiting to restart", async () => {
      // A drop-in keeps the crashed unit in auto-restart for the whole deploy, as a host's own RestartSec may.
      const dropIn = `/etc/systemd/system/${UNIT}.service.d`;
      expect(inside(`mkdir -p ${dropIn} && printf '[Service]\\nRestartSec=300\\n' > ${dropIn}/slow-restart.conf && systemctl daemon-reload`).code).toBe(0);
      try {
        inside(`kill -9 ${unitShow("MainPID")}`);
        let state = "";
        for (let attempt = 0; attempt < 40 && state !== "auto-restart"; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          state = unitShow("SubState");
        }
        expect(state).toBe("auto-restart");
        const next = await deploy();
        expect(inside(`readlink /opt/assembly-line/${NAME}/current`).stdout.trim()).toBe(`releases/${next.id}`);
        expect(await ask(next.url!, "back?")).toMatchObject({ status: "completed", response: { text: "Hello from systemd." } });
        first = next;
      } finally {
        inside(`rm -rf ${dropIn} && systemctl daemon-reload`);
      }
    }, 300_000);

    it("rolls back to the previous release, which systemd runs again, when the new one never gets ready", async () => {
      writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace("briefly.", "tersely."));
      const error = await deploy(env({ DATABASE_URL: undefined })).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_UNHEALTHY"), String(error)).toBe(true);
      // The deploy waits for the previous release to answer again before it reports the rollback.
      expect(String(error)).toContain(`rolled back to ${first.id}, which answers /readyz again`);
      // systemd's restart of the crashed release ends the wait at once, not the ready timeout.
      expect(String(error)).toContain("exited before it answered /readyz");
      // The failing release's own log lines (from the journal) explain the failure.
      expect(String(error)).toContain("DATABASE_URL");
      expect(inside(`readlink /opt/assembly-line/${NAME}/current`).stdout.trim()).toBe(`releases/${first.id}`);
      expect(inside(`systemctl is-active ${UNIT}`).stdout.trim()).toBe("active");
      const releases = inside(`ls /opt/assembly-line/${NAME}/releases`).stdout.trim().split("\n");
      expect(releases).toContain(first.id);
      const failed = (error as AssemblyLineError).details?.release;
      expect(failed).toMatch(/^\d{14}-/);
      expect(releases).not.toContain(failed);
      expect(await ask(first.url!, "still there?")).toMatchObject({ status: "completed", response: { text: "Hello from systemd." } });
    }, 300_000);

    it("removes the unit and the links when a first release never gets ready, so nothing starts it again", async () => {
      const name = "vps-sd-first-broken";
      const error = await deploy(env({ DATABASE_URL: undefined }), name, await freePort()).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_UNHEALTHY"), error instanceof Error ? error.message : JSON.stringify(error)).toBe(true);
      expect(String(error)).toContain("there was no previous release, so the service is stopped");
      expect(inside(`systemctl is-active assembly-line-${name}`).stdout.trim()).not.toBe("active");
      expect(inside(`test -e /etc/systemd/system/assembly-line-${name}.service`).code).not.toBe(0);
      expect(inside(`ls -A /opt/assembly-line/${name}/releases; test -L /opt/assembly-line/${name}/current || echo unlinked`).stdout.trim()).toBe("unlinked");
      // The other agent's unit was not touched.
      expect(inside(`systemctl is-active ${UNIT}`).stdout.trim()).toBe("active");
    }, 300_000);

    it("refuses a host where the given node is not on the PATH before it uploads or starts anything", async () => {
      const name = "vps-sd-no-node";
      const error = await deploy(env(), name, await freePort(), "no-such-node").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG"), String(error)).toBe(true);
      expect(String(error)).toContain('"no-such-node" is not on the PATH of root@127.0.0.1');
      expect(inside(`test -e /opt/assembly-line/${name} || echo absent`).stdout.trim()).toBe("absent");
    }, 120_000);
  });
});
