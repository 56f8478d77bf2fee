import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { VpsDeployTarget } from "../plugins/node/src/deploy/vps-deploy-target.js";
import { freePort } from "./support/free-port.js";
import { sshdInstalled, startSshd, type RunningSshd } from "./support/sshd.js";

const REPO = resolve(import.meta.dirname, "..");
const READY_TIMEOUT_MS = 3_000;

describe.runIf(sshdInstalled("vps deploy ready timeout"))("deploy --target vps: the ready timeout bounds the wait for /readyz", () => {
  let sshd: RunningSshd;
  let root: string;
  let remoteDir: string;
  let agentDir: string;

  beforeAll(async () => {
    sshd = await startSshd();
    root = mkdtempSync(join(tmpdir(), "al-vps-ready-timeout-"));
    remoteDir = join(root, "host");
    agentDir = join(root, "agent");
    mkdirSync(join(agentDir, "conversations"), { recursive: true });
    writeFileSync(join(agentDir, "package.json"), JSON.stringify({ name: "vps-timeout-agent", private: true, type: "module" }));
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "hi" }] }));
    writeFileSync(join(agentDir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "vps-timeout-agent", model: "scripted:conversations/hello.json", instructions: "hi" });\n`);
    symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
    await buildAgent(agentDir);
  }, 120_000);

  afterAll(async () => {
    // A release this suite started detached on the "host", if one outlived the deploy.
    const pidFile = remoteDir ? join(remoteDir, "service.pid") : "";
    if (pidFile && existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGTERM");
      } catch {
        // Already gone.
      }
    }
    await sshd?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("fails with AL_ERR_DEPLOY_UNHEALTHY naming the timeout soon after it passes when the port accepts connections but never answers", async () => {
    const port = await freePort();
    // Something else holds the port the probe asks (a hung earlier process, another service): it accepts and never answers.
    const sockets: Socket[] = [];
    let firstProbeAt: number | undefined;
    const blackHole = createServer((socket) => {
      firstProbeAt ??= Date.now();
      sockets.push(socket);
    });
    await new Promise<void>((done) => blackHole.listen(port, "127.0.0.1", done));
    try {
      const target = new VpsDeployTarget({
        host: "127.0.0.1",
        user: "root",
        sshPort: sshd.port,
        identityFile: sshd.identityFile,
        directory: remoteDir,
        nodePath: process.execPath,
        serviceManager: "process",
        name: "vps-timeout-agent",
        port,
        include: ["conversations"],
        readyTimeoutMs: READY_TIMEOUT_MS,
        // The release listens beside the black hole, so it stays up, unready as far as the probe can tell.
        startArgs: ["--model", "scripted:conversations/hello.json", "--host", "127.0.0.2"],
      });
      const deploy = target.deploy({ artifactRoot: join(agentDir, ".assembly-line"), env: {} }).then(
        () => new Error("deployed"),
        (error: unknown) => error as Error & { code?: string },
      );
      // Each probe once hung for undici's 300 s header timeout, and the loop ran its tries after that.
      const waited = (async () => {
        while (firstProbeAt === undefined) await new Promise((done) => setTimeout(done, 100));
        await new Promise((done) => setTimeout(done, READY_TIMEOUT_MS + 20_000));
        return new Error(`still waiting ${READY_TIMEOUT_MS / 1000 + 20} s after the first probe`);
      })();
      const outcome = await Promise.race([deploy, waited]);
      expect(outcome).toMatchObject({ code: "AL_ERR_DEPLOY_UNHEALTHY", message: expect.stringContaining(`did not answer within ${READY_TIMEOUT_MS / 1000} s /readyz on 127.0.0.1:${port}; there was no previous release, so the service is stopped`) });
    } finally {
      // Lets a hung probe go, so nothing is left running.
      for (const socket of sockets) socket.destroy();
      blackHole.close();
    }
  }, 400_000);
});
