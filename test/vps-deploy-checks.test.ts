import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildAgent } from "@assemblyline-agents/runtime";
import { VpsDeployTarget } from "../plugins/node/src/deploy/vps-deploy-target.js";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** examples/notes-agent built outside the repo (agent.ts's id replaced when given), with stand-ins for ssh and rsync. */
async function setUp(agentId?: string): Promise<{ artifactRoot: string; bin: string; log: string }> {
  const root = mkdtempSync(join(tmpdir(), "al-vps-checks-"));
  roots.push(root);
  const agentDir = join(root, "agent");
  cpSync(resolve(import.meta.dirname, "../examples/notes-agent"), agentDir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  if (agentId !== undefined) writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace('id: "notes-agent"', `id: ${JSON.stringify(agentId)}`));
  symlinkSync(resolve(import.meta.dirname, "../node_modules"), join(root, "node_modules"));
  const { artifactRoot } = await buildAgent(agentDir);
  // Each logs its call and succeeds: what the target would have done on the host, in order.
  const bin = join(root, "bin");
  const log = join(root, "calls.log");
  writeFileSync(log, "");
  mkdirSync(bin);
  writeFileSync(join(bin, "ssh"), `#!/bin/sh\nprintf 'ssh %s\\n' "$*" >> ${JSON.stringify(log)}\ncat > /dev/null\nexit 0\n`);
  writeFileSync(join(bin, "rsync"), `#!/bin/sh\nprintf 'rsync %s\\n' "$*" >> ${JSON.stringify(log)}\nexit 0\n`);
  chmodSync(join(bin, "ssh"), 0o755);
  chmodSync(join(bin, "rsync"), 0o755);
  return { artifactRoot, bin, log };
}

async function deployError(target: VpsDeployTarget, artifactRoot: string, bin: string, env: Record<string, string>): Promise<unknown> {
  const path = process.env.PATH;
  process.env.PATH = `${bin}:/usr/bin:/bin`;
  try {
    return await target.deploy({ artifactRoot, env }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
  } finally {
    process.env.PATH = path;
  }
}

describe("vps deploy refusals come before anything reaches the host", () => {
  it("refuses a secret the host's env file cannot hold (a value with ') without uploading a release", async () => {
    const { artifactRoot, bin, log } = await setUp();
    const target = new VpsDeployTarget({ host: "203.0.113.10", serviceManager: "process", nodePath: "/usr/bin/node", directory: "/opt/assembly-line/notes" });
    const error = await deployError(target, artifactRoot, bin, { OPENAI_API_KEY: "sk-it's-a-key" });
    expect(error).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining("the value of OPENAI_API_KEY contains a quote") });
    expect(readFileSync(log, "utf8")).toBe("");
  }, 120_000);

  it("refuses an agent id of dots, which would name /opt/assembly-line/.. as the release folder", async () => {
    const { artifactRoot, bin, log } = await setUp("..");
    const target = new VpsDeployTarget({ host: "203.0.113.10", serviceManager: "process", nodePath: "/usr/bin/node" });
    const error = await deployError(target, artifactRoot, bin, {});
    expect(error).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining('agent id ".." names no release folder of its own'), fix: expect.stringContaining("--name") });
    expect(readFileSync(log, "utf8")).toBe("");
  }, 120_000);
});
