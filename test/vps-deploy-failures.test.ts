import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { VpsDeployTarget, type VpsDeployOptions } from "../plugins/node/src/deploy/vps-deploy-target.js";
import { recordingLogger } from "../plugins/docker/test/support/recording-logger.js";
import { getJson } from "./support/agent-server.js";
import { freePort } from "./support/free-port.js";
import { sshdInstalled, startSshd, type RunningSshd } from "./support/sshd.js";

/*
 * What the vps target does when ssh, the copy or the switch fails part way, against
 * a real sshd on 127.0.0.1 (the "host" is this machine, under a folder per test).
 */
const REPO = resolve(import.meta.dirname, "..");
const AGENT_ID = "vps-failures-agent";

describe.runIf(sshdInstalled("vps deploy failures"))("deploy --target vps when something fails on the way (a real sshd)", () => {
  let sshd: RunningSshd;
  let root: string;
  let artifactRoot: string;
  let realSsh: string;
  const PATH = process.env.PATH;

  beforeAll(async () => {
    sshd = await startSshd();
    root = mkdtempSync(join(tmpdir(), "al-vps-failures-"));
    const agentDir = join(root, "agent");
    mkdirSync(join(agentDir, "conversations"), { recursive: true });
    writeFileSync(join(agentDir, "package.json"), JSON.stringify({ name: AGENT_ID, private: true, type: "module" }));
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "hi" }] }));
    writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "${AGENT_ID}", model: "scripted:conversations/hello.json", instructions: "hi" });\n`);
    symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
    ({ artifactRoot } = await buildAgent(agentDir));
    realSsh = execFileSync("sh", ["-c", "command -v ssh"], { encoding: "utf8" }).trim();
  }, 120_000);

  afterAll(async () => {
    await sshd?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 180_000);

  /** A fresh folder on the "host"; the releases the test starts there are stopped when it ends. */
  function hostFolder(): string {
    const dir = mkdtempSync(join(root, "host-"));
    onTestFinished(() => {
      const pidFile = join(dir, "service.pid");
      if (existsSync(pidFile)) {
        try {
          process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGTERM");
        } catch {
          // Already gone.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });
    return dir;
  }

  /** PATH for the rest of the test: `bin` first. */
  function pathWith(bin: string, rest = process.env.PATH ?? ""): void {
    process.env.PATH = `${bin}${delimiter}${rest}`;
    onTestFinished(() => {
      process.env.PATH = PATH;
    });
  }

  /** An ssh in front of the real one, for the rest of the test, that runs each shell snippet added (they see ssh's arguments as `$*`) first. */
  function sshWrapper(): { add(snippet: string): void; fail(rule: { pattern: string; code: number; message: string; skip?: number; times?: number }): void } {
    const bin = mkdtempSync(join(root, "bin-"));
    const snippets = join(bin, "snippets.sh");
    writeFileSync(snippets, "");
    writeFileSync(join(bin, "ssh"), `#!/bin/sh\n. '${snippets}'\nexec '${realSsh}' "$@"\n`);
    chmodSync(join(bin, "ssh"), 0o755);
    pathWith(bin);
    const add = (snippet: string) => writeFileSync(snippets, `${readFileSync(snippets, "utf8")}${snippet}\n`);
    let rules = 0;
    return {
      add,
      /**
       * Fails the calls whose arguments match the case pattern, from the (skip + 1)th match on, `times` times:
       * with exit 255 as ssh failing itself, or another code as a failing remote command.
       */
      fail: ({ pattern, code, message, skip = 0, times = 1_000_000 }) => {
        const seen = join(bin, `seen-${++rules}`);
        add(`case "$*" in ${pattern}) n=$(cat '${seen}' 2>/dev/null || echo 0); echo $((n + 1)) > '${seen}'; if [ "$n" -ge ${skip} ] && [ "$n" -lt ${skip + times} ]; then echo '${message}' >&2; exit ${code}; fi;; esac`);
      },
    };
  }

  const target = async (remoteDir: string, options: Partial<VpsDeployOptions> = {}, logger = recordingLogger()) =>
    new VpsDeployTarget(
      {
        host: "127.0.0.1",
        user: "root",
        sshPort: sshd.port,
        identityFile: sshd.identityFile,
        directory: remoteDir,
        nodePath: process.execPath,
        serviceManager: "process",
        name: AGENT_ID,
        port: await freePort(),
        include: ["conversations"],
        // Generous: a cold `assembly-line start` on a loaded 2-core CI machine.
        readyTimeoutMs: 240_000,
        startArgs: ["--model", "scripted:conversations/hello.json", "--host", "127.0.0.1"],
        ...options,
      },
      logger,
    );
  type DeployFailure = Error & { code?: string; details?: Record<string, unknown> };
  const failure = (promise: Promise<unknown>): Promise<DeployFailure> =>
    promise.then(
      () => new Error("deployed"),
      (error: unknown) => error as DeployFailure,
    );

  it("fails with AL_ERR_DEPLOY_TRANSPORT and ssh's reason when nothing listens on the ssh port, instead of taking the host for one without systemd or node", async () => {
    const closedPort = await freePort();
    const remoteDir = hostFolder();
    // Left to detect: the systemd check is the first thing that reaches the host.
    const detecting = await failure((await target(remoteDir, { sshPort: closedPort, serviceManager: undefined, nodePath: undefined })).deploy({ artifactRoot, env: {} }));
    expect(detecting).toMatchObject({ code: "AL_ERR_DEPLOY_TRANSPORT", message: expect.stringContaining(`ssh could not reach root@127.0.0.1:${closedPort} for checking for systemd (exit 255)`) });
    expect(detecting.message).toContain("Connection refused");
    // Given the manager, node is looked for next.
    const finding = await failure((await target(remoteDir, { sshPort: closedPort, nodePath: undefined })).deploy({ artifactRoot, env: {} }));
    expect(finding).toMatchObject({ code: "AL_ERR_DEPLOY_TRANSPORT", message: expect.stringContaining("for finding node (exit 255)") });
    expect(finding.message).not.toContain("is not on the PATH");
  }, 300_000);

  it("fails with AL_ERR_DEPLOY_TRANSPORT when the host refuses the key", async () => {
    const keys = mkdtempSync(join(root, "keys-"));
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(keys, "stranger")]);
    const remoteDir = hostFolder();
    // Once read as "no systemd here": the release would have run as a detached process on a systemd host.
    const refused = await failure((await target(remoteDir, { identityFile: join(keys, "stranger"), serviceManager: undefined })).deploy({ artifactRoot, env: {} }));
    expect(refused).toMatchObject({ code: "AL_ERR_DEPLOY_TRANSPORT", message: expect.stringContaining("for checking for systemd (exit 255)") });
    expect(refused.message).toContain("Permission denied");
    expect(readdirSync(remoteDir)).toEqual([]);
  }, 300_000);

  it("copies the packages with scp when rsync is missing, replacing the folder an interrupted upload left instead of nesting inside it", async () => {
    // Every program on PATH but rsync.
    const bin = mkdtempSync(join(root, "no-rsync-"));
    for (const folder of (process.env.PATH ?? "").split(delimiter).filter(Boolean)) {
      if (!existsSync(folder)) continue;
      for (const program of readdirSync(folder)) {
        if (program !== "rsync" && !existsSync(join(bin, program))) symlinkSync(join(folder, program), join(bin, program));
      }
    }
    pathWith(bin, "");
    expect(() => execFileSync("sh", ["-c", "command -v rsync"])).toThrow();

    const remoteDir = hostFolder();
    // An upload cut short (by an earlier deploy, over rsync or scp): the folder is there, part of it, and not marked complete.
    sshWrapper().add(
      `case "$*" in *"test -f"*"/.complete"*) modules=$(printf '%s' "$*" | grep -o '${remoteDir}/modules/[0-9a-f]*' | head -n 1); mkdir -p "$modules/node_modules/@assemblyline-agents"; echo partial > "$modules/node_modules/left-by-an-interrupted-upload";; esac`,
    );
    const deployed = await (await target(remoteDir)).deploy({ artifactRoot, env: {} });
    const packages = readlinkSync(join(remoteDir, "releases", deployed.id, "node_modules"));
    const digest = /^\.\.\/\.\.\/modules\/([0-9a-f]+)\/node_modules$/.exec(packages)?.[1];
    expect(digest, packages).toBeDefined();
    const modules = join(remoteDir, "modules", digest!);
    expect(existsSync(join(modules, "node_modules", "@assemblyline-agents", "node", "package.json"))).toBe(true);
    expect(existsSync(join(modules, "node_modules", "node_modules"))).toBe(false);
    // Replaced whole: nothing of the partial copy is left, and no upload folder beside it.
    expect(existsSync(join(modules, "node_modules", "left-by-an-interrupted-upload"))).toBe(false);
    expect(readdirSync(modules).sort()).toEqual([".complete", "node_modules"]);
    expect((await getJson(`${deployed.url}/readyz`)).status).toBe(200);
  }, 600_000);

  it("rolls back to the previous release when starting the new one fails, and says so beside the failure", async () => {
    const ssh = sshWrapper();
    const remoteDir = hostFolder();
    const deployTarget = await target(remoteDir);
    const first = await deployTarget.deploy({ artifactRoot, env: {} });

    // The next release's start fails once (as a `systemctl restart` that fails would); the previous one's start goes through.
    ssh.fail({ pattern: "*nohup*", code: 1, message: "refused by the test", times: 1 });
    const error = await failure(deployTarget.deploy({ artifactRoot, env: {} }));
    expect(error).toMatchObject({ code: "AL_ERR_DEPLOY_TRANSPORT", message: expect.stringContaining("starting the release on root@127.0.0.1") });
    expect(error.message).toContain("refused by the test");
    expect(error.message).toContain(`is not serving: rolled back to ${first.id}, which answers /readyz again`);
    const failed = error.details?.release as string;
    expect(failed).not.toBe(first.id);
    expect(readlinkSync(join(remoteDir, "current"))).toBe(`releases/${first.id}`);
    expect(readlinkSync(join(remoteDir, "env"))).toBe(`envs/${first.id}`);
    expect(existsSync(join(remoteDir, "releases", failed))).toBe(false);
    expect((await getJson(`${first.url}/readyz`)).status).toBe(200);
  }, 600_000);

  it("reports the deploy's own failure when the rollback fails too, with the rollback's failure attached", async () => {
    const ssh = sshWrapper();
    const remoteDir = hostFolder();
    const deployTarget = await target(remoteDir);
    const first = await deployTarget.deploy({ artifactRoot, env: {} });

    // The connection drops while the new release is probed (ssh's own exit 255), and the previous release's start fails.
    ssh.fail({ pattern: "*/readyz*", code: 255, message: "Connection reset by peer" });
    ssh.fail({ pattern: "*nohup*", code: 1, message: "refused by the test (start)", skip: 1 });
    const error = await failure(deployTarget.deploy({ artifactRoot, env: {} }));
    expect(error).toMatchObject({ code: "AL_ERR_DEPLOY_TRANSPORT", message: expect.stringContaining("for waiting for /readyz (exit 255): Connection reset by peer") });
    expect(error.message).toContain(`rolling back to ${first.id} failed too`);
    expect(error.details?.rollbackFailure).toEqual(expect.stringContaining("refused by the test (start)"));
  }, 600_000);

  it("keeps a serving release when pruning fails after it, with a warning instead of a failed deploy", async () => {
    const ssh = sshWrapper();
    const remoteDir = hostFolder();
    const logger = recordingLogger();
    const deployTarget = await target(remoteDir, {}, logger);
    await deployTarget.deploy({ artifactRoot, env: {} });

    ssh.fail({ pattern: `*"ls -1 "*/releases*`, code: 2, message: "ls: cannot open directory (refused by the test)" });
    const second = await deployTarget.deploy({ artifactRoot, env: {} });
    expect(readlinkSync(join(remoteDir, "current"))).toBe(`releases/${second.id}`);
    expect((await getJson(`${second.url}/readyz`)).status).toBe(200);
    expect(second.warnings).toEqual([expect.stringContaining(`release ${second.id} serves, but removing the old releases under ${remoteDir} failed`)]);
    expect(logger.entries).toEqual([expect.objectContaining({ level: "warn", fields: expect.objectContaining({ event: "vps.prune_failed", release: second.id }) })]);
  }, 600_000);
});
