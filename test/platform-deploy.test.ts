import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { deployAgent } from "../plugins/node/src/cli/commands/deploy.js";
import { appNameFromAgentId } from "../plugins/node/src/deploy/platform-deploy-target.js";
import { copyExample } from "./support/example-copy.js";

const SECRET = "platform-secret-31c4";
const roots: string[] = [];
// Each platform deploy folder holds a copy of the runtime packages.
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
}, 300_000);

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
      // gateway.ts keeps the runs in PostgreSQL: no volume, no --state-dir (the CMD below).
      expect(toml).not.toContain("[mounts]");
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

describe("deploy --target fly|railway --name", () => {
  it("fly: refuses a name fly does not take, naming the rule, rather than ship to a rewritten one; nothing is written", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const out = join(root, "out");
    // prod.api once shipped to the app prod-api, which may be someone else's.
    for (const name of ["prod.api", "Prod-API", "api-", "-api", "my_agent", "a".repeat(64)]) {
      await expect(deployAgent({ agentDir, target: "fly", name, out, env: {} })).rejects.toMatchObject({
        code: "AL_ERR_DEPLOY_CONFIG",
        message: expect.stringContaining(`fly deploy name ${JSON.stringify(name)} is not an app name fly takes: lowercase letters, digits and dashes, starting and ending with a letter or digit, at most 63 characters`),
      });
    }
    expect(existsSync(out)).toBe(false);
  }, 60_000);

  it("railway: takes any name, and an agent id fly could not make a name of, as they are: `railway up` is given no name, only the release id has it", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const path = process.env.PATH;
    process.env.PATH = "/usr/bin:/bin";
    try {
      const named = await deployAgent({ agentDir, target: "railway", name: "Prod.API_1", out: join(root, "out-named"), env: {} });
      expect(named.details).toMatchObject({ ran: false, commands: ["railway up --detach"] });
      expect(named.id).toMatch(/^Prod\.API_1@/);
      writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace('id: "docker-gateway-agent"', 'id: "!!!"'));
      const unnamed = await deployAgent({ agentDir, target: "railway", out: join(root, "out-unnamed"), env: {} });
      expect(unnamed.id).toMatch(/^!!!@/);
    } finally {
      process.env.PATH = path;
    }
  }, 600_000);

  it("derives the default from the agent id: lowercased, other characters dashes (as before), dashes at the ends trimmed, at most 63 characters", () => {
    expect(appNameFromAgentId("support-bot")).toBe("support-bot");
    expect(appNameFromAgentId("Support_Bot")).toBe("support-bot");
    // Kept as earlier versions derived it, so an app deployed by default keeps its name.
    expect(appNameFromAgentId("support  bot")).toBe("support--bot");
    expect(appNameFromAgentId("Support Bot!")).toBe("support-bot");
    expect(appNameFromAgentId(".hidden.")).toBe("hidden");
    expect(appNameFromAgentId(`${"a".repeat(62)}.b`)).toBe("a".repeat(62));
    expect(appNameFromAgentId("!!!")).toBeUndefined();
  });

  it("refuses an agent id that gives no app name before anything is written, asking for --name", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    writeFileSync(join(agentDir, "agent.ts"), readFileSync(join(agentDir, "agent.ts"), "utf8").replace('id: "docker-gateway-agent"', 'id: "!!!"'));
    const out = join(root, "out");
    await expect(deployAgent({ agentDir, target: "fly", out, env: {} })).rejects.toMatchObject({
      code: "AL_ERR_DEPLOY_CONFIG",
      message: expect.stringContaining('agent id "!!!" gives no fly app name'),
      fix: expect.stringContaining("--name"),
    });
    expect(existsSync(out)).toBe(false);
  }, 120_000);
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
      // A folder an earlier deploy wrote (marked) is replaced whole; unmarked ones: deploy-bundle-folder.test.ts.
      const out = join(root, "out");
      await deploy(out);
      writeFileSync(join(out, "stale.txt"), "from the last deploy");
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

describe("deploy --include", () => {
  it("is checked before anything is built: a path the agent folder lacks, a link leading out of it", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const deploy = (include: string[]) => deployAgent({ agentDir, target: "fly", name: "support-bot", out: join(root, "out"), env: {}, include });
    await expect(deploy(["no-such-folder"])).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining('include "no-such-folder" (--include) names nothing in the agent folder') });
    mkdirSync(join(root, "home", ".ssh"), { recursive: true });
    writeFileSync(join(root, "home", ".ssh", "id_ed25519"), "PRIVATE KEY\n");
    mkdirSync(join(agentDir, "fixtures"));
    symlinkSync(join(root, "home", ".ssh"), join(agentDir, "fixtures", "keys"));
    await expect(deploy(["fixtures"])).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining(`${join("fixtures", "keys")} is a link to`) });
    expect(existsSync(join(agentDir, ".assembly-line"))).toBe(false);
    expect(existsSync(join(root, "out"))).toBe(false);
  }, 60_000);
});

/** examples/notes-agent (no gateway.ts: the default file state) outside the repo, resolving the workspace's packages. */
function copyNotesAgent(): { agentDir: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), "al-platform-state-"));
  roots.push(root);
  const agentDir = join(root, "agent");
  cpSync(resolve(import.meta.dirname, "../examples/notes-agent"), agentDir, { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  symlinkSync(resolve(import.meta.dirname, "../node_modules"), join(root, "node_modules"));
  return { agentDir, root };
}

describe("deploy --target fly|railway with the default file state (no state adapter in gateway.ts)", () => {
  it("fly: mounts a volume and passes --state-dir to it, so a redeploy keeps the runs", async () => {
    const { agentDir, root } = copyNotesAgent();
    const out = join(root, "out");
    const path = process.env.PATH;
    process.env.PATH = "/usr/bin:/bin";
    try {
      await deployAgent({ agentDir, target: "fly", name: "support-bot", out, env: {} });
    } finally {
      process.env.PATH = path;
    }
    expect(readFileSync(join(out, "fly.toml"), "utf8")).toContain('[mounts]\n  source = "assembly_line_state"\n  destination = "/var/lib/assembly-line/state"\n');
    expect(readFileSync(join(out, "Dockerfile"), "utf8")).toContain('"start","/app/agent/.assembly-line","--state-dir","/var/lib/assembly-line/state"]');
  }, 600_000);

  it("railway: is refused before anything is written, saying how to keep the runs (railway.json declares no volume)", async () => {
    const { agentDir, root } = copyNotesAgent();
    const out = join(root, "out");
    await expect(deployAgent({ agentDir, target: "railway", name: "support-bot", out, env: {} })).rejects.toMatchObject({
      code: "AL_ERR_DEPLOY_CONFIG",
      message: expect.stringContaining("railway keeps no folder across deploys for the runs of the default file state"),
      fix: expect.stringContaining("postgresState()"),
    });
    expect(existsSync(out)).toBe(false);
  }, 120_000);
});
