import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { copyExample } from "./support/example-copy.js";

const SECRET = "platform-secret-31c4";
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function filesContaining(dir: string, needle: string): string[] {
  const hits: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) hits.push(...filesContaining(path, needle));
    else if (entry.isFile() && readFileSync(path).includes(needle)) hits.push(path);
  }
  return hits;
}

describe("assembly-line deploy --target fly|railway without the platform CLI", () => {
  it.each(["fly", "railway"] as const)("%s: writes its config, a Dockerfile running `assembly-line start` and the bundle, and returns the exact commands; no secret value is written", async (platform) => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const out = join(root, `out-${platform}`);
    // An empty PATH entry set: neither fly/flyctl nor railway can be found.
    const path = process.env.PATH;
    process.env.PATH = "/usr/bin:/bin";
    let outcome;
    try {
      outcome = await deployAgent({ agentDir, target: platform, name: "support-bot", out, env: { DATABASE_URL: `postgres://u:${SECRET}@db/x`, R2_SECRET_ACCESS_KEY: SECRET, UNRELATED: "no" } });
    } finally {
      process.env.PATH = path;
    }
    expect(outcome.details).toMatchObject({ ran: false, out });
    const commands = outcome.details.commands as string[];
    if (platform === "fly") {
      expect(commands).toEqual(['fly secrets set --app support-bot --stage DATABASE_URL="$DATABASE_URL" R2_SECRET_ACCESS_KEY="$R2_SECRET_ACCESS_KEY"', "fly deploy --app support-bot --config fly.toml"]);
      const toml = readFileSync(join(out, "fly.toml"), "utf8");
      expect(toml).toContain('app = "support-bot"');
      expect(toml).toContain('path = "/readyz"');
      expect(toml).toContain("internal_port = 3000");
    } else {
      expect(commands).toEqual(['railway variables --set "DATABASE_URL=$DATABASE_URL" --set "R2_SECRET_ACCESS_KEY=$R2_SECRET_ACCESS_KEY"', "railway up --detach"]);
      expect(JSON.parse(readFileSync(join(out, "railway.json"), "utf8"))).toMatchObject({ build: { builder: "DOCKERFILE" }, deploy: { healthcheckPath: "/readyz" } });
    }
    expect(readFileSync(join(out, "Dockerfile"), "utf8")).toContain('CMD ["node","/app/node_modules/@assemblyline-agents/node/bin/assembly-line.js","start","/app/agent/.assembly-line"]');
    expect(existsSync(join(out, "agent/.assembly-line/manifest.json"))).toBe(true);
    expect(existsSync(join(out, "node_modules/@assemblyline-agents/node/bin/assembly-line.js"))).toBe(true);
    expect(filesContaining(out, SECRET)).toEqual([]);
  }, 600_000);
});

describe("deploy --out", () => {
  it("clears only a folder a deploy wrote: one with other files, a file, or one holding the agent is refused and left as it was", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const path = process.env.PATH;
    process.env.PATH = "/usr/bin:/bin";
    try {
      const deploy = (out: string) => deployAgent({ agentDir, target: "fly", name: "support-bot", out, env: {} });
      const theirs = join(root, "documents");
      mkdirSync(theirs);
      writeFileSync(join(theirs, "important.txt"), "keep me");
      await expect(deploy(theirs)).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining("holds files no deploy wrote") });
      expect(readFileSync(join(theirs, "important.txt"), "utf8")).toBe("keep me");
      await expect(deploy(join(agentDir, "agent.ts"))).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining("is a file") });
      expect(existsSync(join(agentDir, "agent.ts"))).toBe(true);
      await expect(deploy(root)).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining("holds the agent folder or its build") });
      expect(existsSync(join(agentDir, "agent.ts"))).toBe(true);
      // A folder an earlier deploy wrote is replaced, one written before the mark existed too.
      const out = join(root, "out");
      await deploy(out);
      writeFileSync(join(out, "stale.txt"), "from the last deploy");
      rmSync(join(out, ".assembly-line-bundle"));
      await deploy(out);
      expect(existsSync(join(out, "stale.txt"))).toBe(false);
      expect(existsSync(join(out, "fly.toml"))).toBe(true);
    } finally {
      process.env.PATH = path;
    }
  }, 600_000);
});

describe("deploy --model", () => {
  it("is checked before anything is built: an unknown model, a scripted file the agent folder lacks, an empty value", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const deploy = (model: string) => deployAgent({ agentDir, target: "fly", name: "support-bot", out: join(root, "out"), env: {}, model });
    await expect(deploy("bogus/nothing")).rejects.toMatchObject({ code: "AL_ERR_MODEL_UNKNOWN" });
    await expect(deploy("scripted:/nonexist.json")).rejects.toMatchObject({ code: "AL_ERR_SCRIPTED_MODEL", message: expect.stringContaining("has no such file") });
    await expect(deploy("scripted:../outside.json")).rejects.toMatchObject({ code: "AL_ERR_SCRIPTED_MODEL" });
    await expect(deploy(" ")).rejects.toMatchObject({ code: "AL_ERR_CLI_USAGE", message: expect.stringContaining("--model is empty") });
    expect(existsSync(join(root, "out"))).toBe(false);
  }, 60_000);
});
