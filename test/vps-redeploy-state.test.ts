import { execFileSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { postJson } from "./support/agent-server.js";
import { freePort } from "./support/free-port.js";
import { sshdInstalled, startSshd, type RunningSshd } from "./support/sshd.js";

const TOKEN = "vps-state-token-31c7";
const NOTES_AGENT = resolve(import.meta.dirname, "../examples/notes-agent");
const REPO_MODULES = resolve(import.meta.dirname, "../node_modules");

if (sshdInstalled("vps redeploys keep the runs")) {
  let sshd: RunningSshd;
  let remoteDir: string;
  let root: string;
  let agentDir: string;
  let port: number;
  let sshLog: string;
  let path: string | undefined;

  beforeAll(async () => {
    sshd = await startSshd();
    remoteDir = mkdtempSync(join(tmpdir(), "al-vps-state-host-"));
    // The notes example has no gateway.ts: its runs are kept in the default file state.
    root = mkdtempSync(join(tmpdir(), "al-vps-state-agent-"));
    agentDir = join(root, "agent");
    cpSync(NOTES_AGENT, agentDir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
    symlinkSync(REPO_MODULES, join(root, "node_modules"));
    port = await freePort();
    // Every ssh the deploy runs (its own, and rsync's) goes through a wrapper that records its arguments:
    // what a `ps` on this machine shows, and the command line the remote shell runs.
    const realSsh = execFileSync("sh", ["-c", "command -v ssh"], { encoding: "utf8" }).trim();
    const bin = join(root, "bin");
    mkdirSync(bin);
    sshLog = join(root, "ssh-arguments.log");
    writeFileSync(join(bin, "ssh"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${sshLog}'\nexec '${realSsh}' "$@"\n`);
    chmodSync(join(bin, "ssh"), 0o755);
    path = process.env.PATH;
    process.env.PATH = `${bin}:${path ?? ""}`;
  }, 120_000);

  afterAll(async () => {
    if (path !== undefined) process.env.PATH = path;
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
    for (const dir of [remoteDir, root]) if (dir) rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  const deploy = () =>
    deployAgent({
      agentDir,
      target: "vps",
      name: "notes",
      port,
      model: "scripted:conversations/remember-milk.json",
      include: ["conversations"],
      // Generous: a cold `assembly-line start` on a loaded 2-core CI machine.
      readyTimeoutMs: 240_000,
      env: { ASSEMBLY_LINE_BEARER_TOKEN: TOKEN, HOST: "127.0.0.1" },
      vps: { host: "127.0.0.1", user: "root", sshPort: sshd.port, identityFile: sshd.identityFile, directory: remoteDir, nodePath: process.execPath, serviceManager: "process" },
    });
  const auth = { authorization: `Bearer ${TOKEN}` };

  describe("assembly-line deploy --target vps keeps the runs across releases (a real sshd)", () => {
    it("approves, under the next release, a run paused under the one before", async () => {
      const first = await deploy();
      const paused = await postJson(`${first.url}/message?wait=60`, { message: "Remember to buy milk" }, auth);
      expect(paused.body.status, JSON.stringify(paused.body)).toBe("waiting_approval");
      const runId = paused.body.runId as string;
      const callId = paused.body.pendingApprovals[0].approvalId as string;

      // Only two releases: the run reads its scripted model from the folder of the release it started under,
      // which the default of 3 kept releases keeps.
      const second = await deploy();
      expect(second.details.previous).toBe(first.id);
      expect(second.id).not.toBe(first.id);

      const approved = await postJson(`${second.url}/runs/${runId}/approve`, { callId }, auth);
      expect(approved.status, JSON.stringify(approved.body)).toBe(200);
      expect(approved.body, JSON.stringify(approved.body)).toMatchObject({ status: "completed", response: { text: 'Noted: "Buy milk on the way home". It\'s the only note about milk.' } });

      // The runs live beside the releases (which pruning removes whole), readable by their owner only; no release holds a state folder of its own.
      expect(statSync(join(remoteDir, "state")).mode & 0o077).toBe(0);
      for (const release of readdirSync(join(remoteDir, "releases"))) expect(existsSync(join(remoteDir, "releases", release, "agent", ".assembly-line", "state"))).toBe(false);
    }, 900_000);

    it("passes the bearer token to no command line: the readiness probe reads it from the release's env file", () => {
      const commands = readFileSync(sshLog, "utf8");
      expect(commands).toContain("/readyz");
      expect(commands).not.toContain(TOKEN);
      expect(readFileSync(join(remoteDir, "env"), "utf8")).toContain(`ASSEMBLY_LINE_BEARER_TOKEN='${TOKEN}'`);
    });
  });
}
