import { spawnSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { AssemblyLineError, type DeployTarget } from "@assemblyline-agents/core";
import { builtAgentId, gatewayChoosesState, stageDeployBundle, type DeployBundle } from "@assemblyline-agents/core/deploy";
import { runProgram } from "./remote-shell.js";

export const PLATFORMS = ["fly", "railway"] as const;
export type Platform = (typeof PLATFORMS)[number];

export interface PlatformDeployOptions {
  platform: Platform;
  /**
   * Fly: the app name, lowercase letters, digits and dashes, starting and ending with a letter or
   * digit, at most 63 characters; default: the agent id made into one (see appNameFromAgentId).
   * Railway: only the returned release id's name (`railway up` deploys to the linked service and
   * takes none), any text; default: the agent id as it is.
   */
  name?: string;
  port?: number;
  /** Where the deploy folder is written. Default: `<agentDir>/../.assembly-line-deploy/<platform>`. */
  out?: string;
  baseImage?: string;
  startArgs?: string[];
  include?: string[];
  /** Run the platform CLI when it is on PATH. Default true. */
  runCli?: boolean;
}

export interface PlatformDeployResult {
  id: string;
  /** The deploy folder: Dockerfile, fly.toml or railway.json, the bundle. */
  out: string;
  /** The commands that ship it; they reference variables by name, never their values. */
  commands: string[];
  /** Whether the platform CLI ran them. */
  ran: boolean;
}

const CLIS: Record<Platform, string[]> = { fly: ["fly", "flyctl"], railway: ["railway"] };

/** Where a release keeps the runs of the default file state (`start --state-dir`): fly mounts its volume there. */
export const RELEASE_STATE_DIR = "/var/lib/assembly-line/state";
/** The fly volume mounted at RELEASE_STATE_DIR: one per app, created by `fly deploy` when the app has none. */
export const FLY_STATE_VOLUME = "assembly_line_state";

/**
 * Fly.io and Railway: write a deploy folder (the bundle, a Dockerfile, and
 * fly.toml or railway.json with /readyz as the health check), then run the
 * platform's CLI when it is installed, or return the exact commands to run.
 * Secrets are set on the platform from the deploying environment by name
 * (`fly secrets set NAME="$NAME"`); no value is written to the folder.
 */
export class PlatformDeployTarget implements DeployTarget {
  readonly name: Platform;

  constructor(private readonly options: PlatformDeployOptions) {
    if (!PLATFORMS.includes(options.platform)) throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `unknown platform ${JSON.stringify(options.platform)}`, { fix: `Use ${PLATFORMS.join(" or ")}.` });
    for (const option of ["name", "out", "baseImage"] as const) {
      if (options[option]?.trim() === "") throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `${options.platform} deploy option ${option} is empty`, { fix: `Give ${option} a value, or leave it out for its default.` });
    }
    // Only fly's commands take the name; railway's never do, so no rule of fly's applies to it.
    if (options.platform === "fly" && options.name !== undefined && !isAppName(options.name)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `${options.platform} deploy name ${JSON.stringify(options.name)} is not an app name ${options.platform} takes: ${APP_NAME_RULE}`, {
        fix: `Pass the app's name exactly as it is on ${options.platform} (--name); it is never rewritten, so the deploy cannot land on another app.`,
        details: { option: "name", name: options.name },
      });
    }
    const port: unknown = options.port;
    if (port !== undefined && !(Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65_535)) {
      // Written into the Dockerfile and the platform's config: 0 or NaN there fails only on the platform, after the upload.
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `${options.platform} deploy port ${typeof port === "number" ? String(port) : JSON.stringify(port)} is not a port number`, { fix: "Use 1-65535, e.g. 3000, or omit it.", details: { option: "port" } });
    }
    this.name = options.platform;
  }

  async deploy(args: { artifactRoot: string; env: Record<string, string | undefined> }): Promise<PlatformDeployResult> {
    const artifactRoot = resolve(args.artifactRoot);
    const out = resolve(this.options.out ?? join(artifactRoot, "..", "..", ".assembly-line-deploy", this.options.platform));
    // Without a state adapter in gateway.ts the runs are files: outside the image, or a redeploy starts with none.
    const stateDir = (await gatewayChoosesState(artifactRoot)) ? undefined : RELEASE_STATE_DIR;
    if (stateDir && this.options.platform === "railway") {
      throw new AssemblyLineError(
        "AL_ERR_DEPLOY_CONFIG",
        "railway keeps no folder across deploys for the runs of the default file state (railway.json cannot declare a volume): every redeploy would start with no runs, a run waiting for approval included",
        {
          fix: 'Choose a state adapter in gateway.ts: state: postgresState() (or neonPostgres()) with DATABASE_URL, or attach a volume to the Railway service (its settings, or `railway volume add`) mounted at e.g. /data and choose state: localState({ directory: "/data/state" }).',
          details: { platform: "railway" },
        },
      );
    }
    const fly = this.options.platform === "fly";
    // Refused before anything is written when the agent id gives no fly app name.
    const agentId = fly && this.options.name === undefined ? await builtAgentId(artifactRoot) : undefined;
    let app = this.options.name ?? (agentId === undefined ? undefined : this.defaultAppName(agentId));
    // stageDeployBundle clears `out` first, refusing a folder no deploy wrote.
    const bundle = await stageDeployBundle({ artifactRoot, outDir: out, ...(this.options.include ? { include: this.options.include } : {}) });
    // The platform builds remotely from this folder, so the packages go in it.
    await copyTree(join(bundle.modules.dir, "node_modules"), join(out, "node_modules"));
    app ??= fly ? this.defaultAppName(bundle.agentId) : bundle.agentId;
    const port = this.options.port ?? 3000;
    await writeFile(join(out, "Dockerfile"), dockerfile(bundle, this.options.baseImage ?? "node:22-slim", port, [...(stateDir ? ["--state-dir", stateDir] : []), ...(this.options.startArgs ?? [])]));
    await writeFile(join(out, ".dockerignore"), "Dockerfile\n.dockerignore\n");
    const names = Object.keys(args.env).filter((name) => args.env[name] !== undefined).sort();
    let commands: string[];
    if (this.options.platform === "fly") {
      await writeFile(join(out, "fly.toml"), flyToml(app, port, stateDir));
      commands = [
        ...(names.length > 0 ? [`fly secrets set --app ${app} --stage ${names.map((name) => `${name}="$${name}"`).join(" ")}`] : []),
        `fly deploy --app ${app} --config fly.toml`,
      ];
    } else {
      await writeFile(join(out, "railway.json"), railwayJson());
      commands = [...(names.length > 0 ? [`railway variables ${names.map((name) => `--set "${name}=$${name}"`).join(" ")}`] : []), "railway up --detach"];
    }
    const cli = this.options.runCli === false ? undefined : CLIS[this.options.platform].find((program) => spawnSync("sh", ["-c", `command -v ${program}`]).status === 0);
    if (!cli) return { id: `${app}@${bundle.revision}`, out, commands, ran: false };
    for (const command of commands) {
      // The commands name variables ("$NAME"); the shell fills them from the deploying env, so values never touch disk.
      const result = await runProgramWithEnv(out, command.replace(/^(fly|railway) /, `${cli} `), args.env);
      if (result.code !== 0) {
        throw new AssemblyLineError("AL_ERR_DEPLOY_TRANSPORT", `\`${command}\` failed (exit ${result.code}): ${(result.stderr || result.stdout).trim().slice(-2_000)}`, {
          fix: `Log in to the platform CLI (${cli} auth login / railway login) and run the command again from ${out}.`,
        });
      }
    }
    return { id: `${app}@${bundle.revision}`, out, commands, ran: true };
  }

  /** The app name derived from the agent id, or a refusal asking for --name when none can be. */
  private defaultAppName(agentId: string): string {
    const app = appNameFromAgentId(agentId);
    if (app !== undefined) return app;
    throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `agent id ${JSON.stringify(agentId)} gives no ${this.options.platform} app name (${APP_NAME_RULE})`, {
      fix: `Pass the app's name on ${this.options.platform} with --name (deployAgent: name), e.g. --name support-bot.`,
      details: { agentId },
    });
  }
}

const APP_NAME_MAX = 63;
const APP_NAME_RULE = `lowercase letters, digits and dashes, starting and ending with a letter or digit, at most ${APP_NAME_MAX} characters`;

/** Fly's app names (a DNS label: `<app>.fly.dev`). */
function isAppName(name: string): boolean {
  return name.length <= APP_NAME_MAX && /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(name);
}

/**
 * The default app name: the agent id lowercased, each character an app name cannot hold a dash
 * (as earlier versions derived it, so an existing app keeps its name), with dashes at either end
 * trimmed and cut to 63 characters; undefined when nothing is left (an id of symbols alone).
 */
export function appNameFromAgentId(agentId: string): string | undefined {
  const name = agentId
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, "-")
    .replace(/^-+/, "")
    .slice(0, APP_NAME_MAX)
    .replace(/-+$/, "");
  return isAppName(name) ? name : undefined;
}

async function runProgramWithEnv(cwd: string, command: string, env: Record<string, string | undefined>) {
  const { spawn } = await import("node:child_process");
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const child = spawn("sh", ["-c", command], { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.once("close", (code) => done({ code: code ?? -1, stdout, stderr }));
    child.once("error", (error) => done({ code: -1, stdout, stderr: String(error) }));
  });
}

async function copyTree(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  const result = await runProgram("sh", ["-c", 'mkdir -p "$1" && tar -C "$0" -cf - . | tar -C "$1" -xf -', from, to]);
  if (result.code !== 0) throw new AssemblyLineError("AL_ERR_DEPLOY_BUILD", `copying the runtime packages into ${to} failed: ${result.stderr.trim()}`, { fix: "Check free space and permissions." });
}

function dockerfile(bundle: DeployBundle, baseImage: string, port: number, startArgs: string[]): string {
  const cmd = ["node", `/app/${bundle.cli}`, "start", `/app/${bundle.artifactDir}`, ...startArgs];
  return [
    "# Generated by assembly-line deploy; secrets are set on the platform, never baked in.",
    `FROM ${baseImage}`,
    "COPY node_modules /app/node_modules",
    "COPY agent /app/agent",
    "WORKDIR /app/agent",
    `ENV NODE_ENV=production PORT=${port} HOST=0.0.0.0`,
    `EXPOSE ${port}`,
    `CMD ${JSON.stringify(cmd)}`,
    "",
  ].join("\n");
}

/** `stateDir`: where the volume holding the runs of the default file state is mounted. */
function flyToml(app: string, port: number, stateDir: string | undefined): string {
  return [
    "# Generated by assembly-line deploy.",
    `app = "${app}"`,
    "",
    "[build]",
    '  dockerfile = "Dockerfile"',
    "",
    "[http_service]",
    `  internal_port = ${port}`,
    "  force_https = true",
    '  auto_stop_machines = "off"',
    "  min_machines_running = 1",
    "",
    "[[http_service.checks]]",
    '  grace_period = "10s"',
    '  interval = "15s"',
    '  method = "GET"',
    '  path = "/readyz"',
    '  timeout = "5s"',
    "",
    ...(stateDir ? ["# The runs of the default file state, kept across deploys.", "[mounts]", `  source = "${FLY_STATE_VOLUME}"`, `  destination = "${stateDir}"`, ""] : []),
  ].join("\n");
}

function railwayJson(): string {
  return (
    JSON.stringify(
      {
        $schema: "https://railway.com/railway.schema.json",
        build: { builder: "DOCKERFILE", dockerfilePath: "Dockerfile" },
        deploy: { healthcheckPath: "/readyz", healthcheckTimeout: 60, restartPolicyType: "ON_FAILURE", restartPolicyMaxRetries: 5 },
      },
      null,
      2,
    ) + "\n"
  );
}
