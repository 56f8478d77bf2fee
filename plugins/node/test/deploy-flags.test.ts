import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { AssemblyLineError, isAssemblyLineError } from "@assemblyline-agents/core";
import { deployAgent } from "../src/cli/commands/deploy.js";
import { runCommandLine } from "../src/cli/program.js";
import { tempDir } from "./support/host.js";

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");
const quiet = { out: () => undefined, err: () => undefined };

/** The error `assembly-line deploy <args>` stops with. Refusals come before the build, so the agent folder need not exist. */
async function deployError(args: string[]): Promise<AssemblyLineError> {
  const error = await runCommandLine(["deploy", join(tempDir("al-deploy-"), "no-agent"), ...args], quiet).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isAssemblyLineError(error)) throw new Error(`expected an AssemblyLineError, got ${String(error)}`);
  return error;
}

describe("assembly-line deploy --target local", () => {
  // Every flag the usage lists for a started release: local copies the revision and starts nothing.
  it.each([
    ["--name", "support-bot", "docker|vps|fly|railway"],
    ["--model", "scripted:conversations/hello.json", "docker|vps|fly|railway"],
    ["--include", "conversations", "docker|vps|fly|railway"],
    ["--port", "8080", "docker|vps|fly|railway"],
    ["--ready-timeout", "30", "docker|vps"],
    ["--base-image", "node:22", "docker|fly|railway"],
    ["--network", "host", "docker"],
    ["--host", "203.0.113.10", "vps"],
    ["--user", "deploy", "vps"],
    ["--ssh-port", "2222", "vps"],
    ["--identity", "id_ed25519", "vps"],
    ["--dir", "/opt/agent", "vps"],
    ["--node", "/usr/bin/node", "vps"],
    ["--service-manager", "process", "vps"],
    ["--out", "release", "fly|railway"],
  ])("refuses %s, naming the targets that take it, instead of dropping it", async (flag, value, takers) => {
    const error = await deployError(["--target", "local", flag, value]);
    expect(error.code).toBe("AL_ERR_CLI_USAGE");
    expect(error.message).toContain(`--target local does not take ${flag}: only --target ${takers}`);
    expect(error.fix).toContain(`Leave ${flag} out`);
    expect(error.fix).toContain("starts nothing");
  });

  it("refuses an --include path that does not exist before building anything, rather than deploying without it", async () => {
    const agentDir = join(tempDir("al-deploy-"), "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    const error = await runCommandLine(["deploy", agentDir, "--target", "local", "--include", "no-such-folder"], quiet).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_CLI_USAGE")).toBe(true);
    expect((error as Error).message).toContain("--include");
    expect(existsSync(join(agentDir, ".assembly-line"))).toBe(false);
  });

  it("still copies the built revision when given no other flags", async () => {
    const agentDir = join(tempDir("al-deploy-"), "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    const lines: string[] = [];
    expect(await runCommandLine(["deploy", agentDir, "--target", "local", "--json"], { out: (line) => lines.push(line), err: () => undefined })).toBe(0);
    const outcome = (JSON.parse(lines.at(-1)!) as { data: { target: string; id: string; url: string } }).data;
    expect(outcome).toMatchObject({ target: "local", id: expect.stringMatching(/^rev_/) });
    const folder = fileURLToPath(outcome.url);
    expect(existsSync(join(folder, ".assembly-line", "manifest.json"))).toBe(true);
    expect(readFileSync(join(agentDir, ".assembly-line-deployments", "CURRENT"), "utf8").trim()).toBe(outcome.id);
  }, 60_000);
});

describe("assembly-line deploy: a flag the chosen target would ignore", () => {
  it.each([
    ["fly", "--ready-timeout", "30", "docker|vps"],
    ["railway", "--network", "host", "docker"],
    ["docker", "--host", "203.0.113.10", "vps"],
    ["docker", "--out", "release", "fly|railway"],
    ["vps", "--base-image", "node:22", "docker|fly|railway"],
  ])("--target %s refuses %s", async (target, flag, value, takers) => {
    const extra = target === "vps" ? ["--host", "203.0.113.10"] : [];
    const error = await deployError(["--target", target, ...extra, flag, value]);
    expect(error.code).toBe("AL_ERR_CLI_USAGE");
    expect(error.message).toContain(`--target ${target} does not take ${flag}: only --target ${takers}`);
  });
});

describe("assembly-line deploy: an empty flag value (an unset shell variable) is refused, not dropped", () => {
  it.each([
    ["docker", "--name"],
    ["fly", "--name"],
    ["docker", "--base-image"],
    ["docker", "--network"],
    ["fly", "--out"],
    ["vps", "--identity"],
    ["vps", "--dir"],
    ["fly", "--include"],
  ])("--target %s %s \"\"", async (target, flag) => {
    const error = await deployError(["--target", target, ...(target === "vps" ? ["--host", "203.0.113.10"] : []), flag, ""]);
    expect(error).toMatchObject({ code: "AL_ERR_CLI_USAGE", message: expect.stringContaining(`${flag} is empty`) });
  });
});

describe("deployAgent", () => {
  it("refuses an option its target does not take, naming the option and its flag", async () => {
    const error = await deployAgent({ agentDir: join(tempDir("al-deploy-"), "no-agent"), target: "local", include: ["conversations"] }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("deploy target local does not take option include (--include): only --target docker|vps|fly|railway do");
  });

  it("gives the release its model provider's key, and no other provider's", async () => {
    const agentDir = join(tempDir("al-deploy-"), "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    const env = { OPENAI_API_KEY: "sk-release", ANTHROPIC_API_KEY: "sk-other", HOME: "/root", ASSEMBLY_LINE_BEARER_TOKEN: "t" };
    // notes-agent's agent.ts names openai/gpt-5.4-mini.
    const outcome = await deployAgent({ agentDir, target: "local", env });
    expect(outcome.envNames).toEqual(["ASSEMBLY_LINE_BEARER_TOKEN", "OPENAI_API_KEY"]);
  }, 60_000);

  it("refuses an empty text option, naming its flag, instead of deploying with its default", async () => {
    const agentDir = join(tempDir("al-deploy-"), "no-agent");
    for (const [options, flag] of [
      [{ target: "fly", name: "" }, "--name"],
      [{ target: "docker", baseImage: " " }, "--base-image"],
      [{ target: "docker", network: "" }, "--network"],
      [{ target: "railway", out: "" }, "--out"],
      [{ target: "vps", vps: { host: "203.0.113.10", identityFile: "" } }, "--identity"],
    ] as const) {
      await expect(deployAgent({ agentDir, ...options })).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining(`(${flag}) is empty`) });
    }
  });

  it("refuses vps connection options on another target", async () => {
    const error = await deployAgent({ agentDir: join(tempDir("al-deploy-"), "no-agent"), target: "docker", vps: { host: "203.0.113.10" } }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_DEPLOY_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("option vps");
  });
});

describe("assembly-line deploy without --target", () => {
  const withGatewayDeploy = (releases: string) => {
    const agentDir = join(tempDir("al-deploy-"), "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    writeFileSync(
      join(agentDir, "gateway.ts"),
      // adapter("local", ...) is localDeploy's descriptor: the core helper resolves from any agent folder.
      `import { adapter, defineGateway } from "@assemblyline-agents/core";\nexport default defineGateway({ deploy: adapter("local", { directory: ${JSON.stringify(releases)} }) });\n`,
    );
    return agentDir;
  };

  it("deploys where gateway.ts's deploy: says, with its options", async () => {
    const releases = join(tempDir("al-deploy-"), "releases");
    const lines: string[] = [];
    expect(await runCommandLine(["deploy", withGatewayDeploy(releases), "--json"], { out: (line) => lines.push(line), err: () => undefined })).toBe(0);
    const outcome = (JSON.parse(lines.at(-1)!) as { data: { target: string; id: string; url: string } }).data;
    expect(outcome).toMatchObject({ target: "local", id: expect.stringMatching(/^rev_/) });
    // Into gateway.ts's directory, not the default beside the agent.
    expect(fileURLToPath(outcome.url).startsWith(releases)).toBe(true);
    expect(existsSync(join(fileURLToPath(outcome.url), ".assembly-line", "manifest.json"))).toBe(true);
  }, 60_000);

  // Collected whenever given, so the gateway's target refuses them like any flag it does not take.
  it.each([
    ["--host", "203.0.113.10"],
    ["--user", "deploy"],
    ["--identity", "/home/me/.ssh/id_ed25519"],
    ["--service-manager", "process"],
  ])("refuses the vps flag %s when gateway.ts chooses another target, instead of deploying without it", async (flag, value) => {
    const outcome = await runCommandLine(["deploy", withGatewayDeploy(join(tempDir("al-deploy-"), "releases")), flag, value], quiet).catch((caught: unknown) => caught);
    expect(outcome).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining(`deploy target local does not take option vps (${flag})`) });
  }, 60_000);

  it("refuses a target flag the gateway's target does not take, and says how to choose one when gateway.ts chooses none", async () => {
    const named = await runCommandLine(["deploy", withGatewayDeploy(join(tempDir("al-deploy-"), "releases")), "--name", "bot"], quiet).catch((caught: unknown) => caught);
    expect(named).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining("deploy target local does not take option name (--name)") });
    const agentDir = join(tempDir("al-deploy-"), "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    const missing = await runCommandLine(["deploy", agentDir], quiet).catch((caught: unknown) => caught);
    expect(missing).toMatchObject({ code: "AL_ERR_CLI_USAGE", message: expect.stringContaining("missing --target: gateway.ts chooses no deploy target") });
  }, 60_000);
});
