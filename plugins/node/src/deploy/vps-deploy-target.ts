import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { AssemblyLineError, MAX_TIMER_MS, errorSummary, isAssemblyLineError, isTimerDelay, type DeployTarget, type RuntimeLogger } from "@assemblyline-agents/core";
import { gatewayChoosesState, stageDeployBundle, type DeployBundle } from "@assemblyline-agents/core/deploy";
import { quote, remote, remoteResult, runProgram, sshArgs, type SshTarget } from "./remote-shell.js";

export interface VpsDeployOptions {
  host: string;
  /** Default root. */
  user?: string;
  /** Default 22. */
  sshPort?: number;
  identityFile?: string;
  /** Extra ssh `-o` options. Default: ["StrictHostKeyChecking=accept-new"]. */
  sshOptions?: string[];
  /** Where releases live on the host. Default /opt/assembly-line/<name>. */
  directory?: string;
  /** Service and folder name. Default: the agent id. */
  name?: string;
  /** Port the release listens on. Default 3000. */
  port?: number;
  /** node on the host. Default "node" (from PATH). */
  nodePath?: string;
  /** systemd (a unit per agent) or process (a pid file, for hosts without systemd). Default: systemd when it runs on the host. */
  serviceManager?: ServiceManager;
  /** How long the new release has to answer /readyz. Default 60 s. */
  readyTimeoutMs?: number;
  /** Releases kept on the host, the one just deployed included; at least 2, so the one before it is there to roll back to. Default 3. */
  keepReleases?: number;
  startArgs?: string[];
  include?: string[];
  modulesCache?: string;
}

export interface VpsDeployResult {
  id: string;
  url: string;
  /** The release that served before, now kept for rollback. */
  previous: string | undefined;
  serviceManager: ServiceManager;
  /** What went wrong after the release was serving (pruning old releases or packages): the deploy stands, and they are also logged. */
  warnings?: string[];
}

export const SERVICE_MANAGERS = ["systemd", "process"] as const;
export type ServiceManager = (typeof SERVICE_MANAGERS)[number];

type Readiness = "ready" | "exited" | "timeout";

/*
 * Layout on the host (<dir> = options.directory):
 *   <dir>/modules/<digest>/node_modules    runtime packages, shared by releases with the same dependencies
 *                                          (removed once no kept release links to them)
 *   <dir>/releases/<id>/agent              one release: sources + manifest
 *   <dir>/releases/<id>/node_modules  ->   ../../modules/<digest>/node_modules
 *   <dir>/current                     ->   releases/<id>
 *   <dir>/envs/<id>                        each release's environment (0600), written from the deploying env
 *   <dir>/env                         ->   envs/<id>, switched with `current` (a rollback gets its own env back)
 *   <dir>/state                            the runs (file state, `start --state-dir`) when gateway.ts keeps them nowhere
 *                                          else: shared by every release, never pruned, so a redeploy keeps them
 * The service runs <dir>/current; a deploy switches `current`, restarts, checks
 * /readyz on the host, and on any failure from the switch to the answer (a refused
 * restart, a dropped connection, a release that never answers) switches back and
 * restarts the previous release.
 */
export class VpsDeployTarget implements DeployTarget {
  readonly name = "vps";
  private readonly ssh: SshTarget;
  private readonly logger: RuntimeLogger;

  constructor(
    private readonly options: VpsDeployOptions,
    logger?: RuntimeLogger,
  ) {
    if (!options.host) throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", "the vps target needs a host", { fix: "Pass --host <address> (and --user, --ssh-port, --identity as needed)." });
    if (options.name !== undefined && !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(options.name)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `vps name ${JSON.stringify(options.name)} is not a service name`, { fix: "Use letters, digits, '.', '_' and '-'." });
    }
    if (options.keepReleases !== undefined && !(Number.isInteger(options.keepReleases) && options.keepReleases >= MIN_KEPT_RELEASES)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `vps keepReleases ${JSON.stringify(options.keepReleases)} is not a whole number of at least ${MIN_KEPT_RELEASES}: the release just deployed and the one before it, which a failed deploy rolls back to`, {
        fix: "Use e.g. 3 (the default), or omit it.",
        details: { option: "keepReleases" },
      });
    }
    if (options.directory !== undefined && !posix.isAbsolute(options.directory)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `vps directory ${JSON.stringify(options.directory)} is not an absolute path`, { fix: "Use a path such as /opt/assembly-line/my-agent." });
    }
    for (const [option, example] of [["port", 3000], ["sshPort", 22]] as const) {
      const value: unknown = options[option];
      if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65_535)) {
        throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `vps ${option} ${shown(value)} is not a port number`, { fix: `Use 1-65535, e.g. ${example}, or omit it.`, details: { option } });
      }
    }
    if (options.readyTimeoutMs !== undefined && !(Number.isInteger(options.readyTimeoutMs) && isTimerDelay(options.readyTimeoutMs))) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `vps readyTimeoutMs ${shown(options.readyTimeoutMs)} is not a positive whole number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`, { fix: "Use e.g. 60000, or omit it.", details: { option: "readyTimeoutMs" } });
    }
    // Anything else once ran the release as a detached process, even on a host with systemd.
    if (options.serviceManager !== undefined && !(SERVICE_MANAGERS as readonly unknown[]).includes(options.serviceManager)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `vps serviceManager ${shown(options.serviceManager)} is not ${SERVICE_MANAGERS.join(" or ")}`, {
        fix: `Use ${SERVICE_MANAGERS.map((manager) => JSON.stringify(manager)).join(" or ")}, or omit it to use systemd when it runs on the host.`,
        details: { option: "serviceManager" },
      });
    }
    this.logger = logger ?? stderrWarnings();
    this.ssh = { host: options.host, user: options.user ?? "root", port: options.sshPort ?? 22, ...(options.identityFile ? { identityFile: options.identityFile } : {}), options: options.sshOptions ?? ["StrictHostKeyChecking=accept-new"] };
  }

  async deploy(args: { artifactRoot: string; env: Record<string, string | undefined> }): Promise<VpsDeployResult> {
    const port = this.options.port ?? 3000;
    // Before anything reaches the host: a value the env file cannot hold would otherwise be refused after the upload, leaving the release behind.
    const environment = envFile(args.env, port);
    const work = await mkdtemp(join(tmpdir(), "al-vps-deploy-"));
    try {
      const bundle = await stageDeployBundle({
        artifactRoot: args.artifactRoot,
        outDir: join(work, "bundle"),
        ...(this.options.include ? { include: this.options.include } : {}),
        ...(this.options.modulesCache ? { modulesCache: this.options.modulesCache } : {}),
      });
      const name = this.options.name ?? releaseName(bundle.agentId);
      const dir = this.options.directory ?? `/opt/assembly-line/${name}`;
      const id = `${new Date().toISOString().replace(/[-:.TZ]/g, "").slice(0, 14)}-${bundle.revision.slice(0, 16)}-${randomBytes(3).toString("hex")}`;
      const manager = this.options.serviceManager ?? ((await remoteResult(this.ssh, "checking for systemd", "test -d /run/systemd/system")).code === 0 ? "systemd" : "process");
      const node = await this.resolveNode(this.options.nodePath ?? "node");

      const stateDir = (await gatewayChoosesState(join(bundle.dir, bundle.artifactDir))) ? undefined : `${dir}/state`;
      await remote(
        this.ssh,
        "preparing the release folders",
        `mkdir -p ${quote(`${dir}/releases`)} ${quote(`${dir}/modules`)} && mkdir -p -m 700 ${quote(`${dir}/envs`)}${stateDir ? ` && mkdir -p -m 700 ${quote(stateDir)}` : ""}`,
      );
      await this.uploadModules(bundle, dir);
      await this.copy(`${bundle.dir}/agent/`, `${dir}/releases/${id}/agent/`);
      await remote(this.ssh, "linking the release's packages", `ln -sfn ${quote(`../../modules/${bundle.modules.digest}/node_modules`)} ${quote(`${dir}/releases/${id}/node_modules`)}`);
      await remote(this.ssh, "writing the release environment", `umask 077 && cat > ${quote(`${dir}/envs/${id}`)}`, environment);
      const previous = (await remoteResult(this.ssh, "reading the current release", `readlink ${quote(`${dir}/current`)}`)).stdout.trim().replace(/^releases\//, "") || undefined;

      const service = new ReleaseService(this.ssh, { name, dir, port, manager, stateDir, node, cli: bundle.cli, artifactDir: bundle.artifactDir, startArgs: this.options.startArgs ?? [] });
      const readyTimeoutMs = this.options.readyTimeoutMs ?? 60_000;
      const release = { service, dir, id, previous, readyTimeoutMs };
      let outcome: Readiness;
      try {
        await service.switchTo(id);
        outcome = await service.waitReady(readyTimeoutMs);
      } catch (error) {
        // From the switch on, the host may run the new release, none, or a half-restarted one: put the previous one back.
        const rollback = await this.rollBack(release);
        throw withRollback(error, rollback, { release: id, previous });
      }
      if (outcome === "ready") {
        const warnings = await this.prune(dir, id, previous, bundle.modules.digest);
        return { id, url: `http://${this.ssh.host.includes(":") ? `[${this.ssh.host}]` : this.ssh.host}:${port}`, previous, serviceManager: manager, ...(warnings.length > 0 ? { warnings } : {}) };
      }
      const logs = await service.logs();
      const rollback = await this.rollBack(release);
      throw new AssemblyLineError("AL_ERR_DEPLOY_UNHEALTHY", `release ${id} ${notReady(outcome, readyTimeoutMs)} /readyz on ${this.ssh.host}:${port}; ${rollback.said}.\n${logs}`, {
        fix: "Read the release's log lines above (a missing environment variable is the usual cause), fix, and deploy again.",
        details: { release: id, previous, ...(rollback.failure !== undefined ? { rollbackFailure: rollback.failure } : {}) },
      });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * After the switch failed: the previous release switched back and restarted (with none, the
   * failed one stopped and unlinked), then the failed release's folders removed. Never throws:
   * how the rollback went (or why it failed) is said beside the deploy's own error.
   */
  private async rollBack(release: { service: ReleaseService; dir: string; id: string; previous: string | undefined; readyTimeoutMs: number }): Promise<Rollback> {
    const { service, dir, id, previous, readyTimeoutMs } = release;
    let said: string;
    try {
      if (previous) {
        await service.switchTo(previous);
        const back = await service.waitReady(readyTimeoutMs);
        said = back === "ready" ? `rolled back to ${previous}, which answers /readyz again` : `rolled back to ${previous}, which ${notReady(back, readyTimeoutMs)} /readyz too: check the host`;
      } else {
        await service.remove();
        said = "there was no previous release, so the service is stopped";
      }
    } catch (error) {
      const failure = reasonOf(error);
      // Nothing is removed: `current` may still point at the failed release.
      return { said: previous ? `rolling back to ${previous} failed too, check the host: ${failure}` : `stopping the failed release failed too, check the host: ${failure}`, failure };
    }
    try {
      await remote(this.ssh, "removing the failed release", `rm -rf ${quote(`${dir}/releases/${id}`)} ${quote(`${dir}/envs/${id}`)}`);
    } catch (error) {
      said += ` (its folder ${dir}/releases/${id} was left: ${reasonOf(error)})`;
    }
    return { said };
  }

  /** Old releases and unused packages go; a failure leaves more on the disk, not a broken release, so it is a warning. */
  private async prune(dir: string, id: string, previous: string | undefined, digest: string): Promise<string[]> {
    const warnings: string[] = [];
    const steps: Array<[string, () => Promise<void>]> = [
      ["the old releases", () => this.pruneReleases(dir, id, previous)],
      ["the unused runtime packages", () => this.pruneModules(dir, digest)],
    ];
    for (const [what, step] of steps) {
      try {
        await step();
      } catch (error) {
        const warning = `release ${id} serves, but removing ${what} under ${dir} failed; they stay until a later deploy removes them: ${reasonOf(error)}`;
        warnings.push(warning);
        this.logger.warn({ event: "vps.prune_failed", release: id, host: this.ssh.host, reason: reasonOf(error) }, warning);
      }
    }
    return warnings;
  }

  /**
   * node as an absolute path, found on the host's PATH over ssh: the unit then runs the
   * same node the deploy checked (systemd searches its own fixed path, and before 239
   * refuses a relative ExecStart), and a host without node fails here, not as a crash loop.
   */
  private async resolveNode(node: string): Promise<string> {
    if (posix.isAbsolute(node)) return node;
    const found = await remoteResult(this.ssh, "finding node", `command -v ${quote(node)}`);
    const path = found.stdout.trim();
    if (found.code !== 0 || !posix.isAbsolute(path)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `${JSON.stringify(node)} is not on the PATH of ${this.ssh.user}@${this.ssh.host}`, { fix: "Install Node 20+ on the host, or pass --node <absolute path of node on the host>." });
    }
    return path;
  }

  /** The runtime packages go up once per dependency digest; later releases only link to them. */
  private async uploadModules(bundle: DeployBundle, dir: string): Promise<void> {
    const target = `${dir}/modules/${bundle.modules.digest}`;
    // Touched when reused: the folder's modification time is its last use (see pruneModules).
    if ((await remoteResult(this.ssh, "checking for uploaded packages", `test -f ${quote(`${target}/.complete`)} && touch ${quote(target)}`)).code === 0) return;
    await this.copy(`${bundle.modules.dir}/node_modules/`, `${target}/node_modules/`);
    await remote(this.ssh, "marking the packages complete", `touch ${quote(`${target}/.complete`)}`);
  }

  /** rsync when the machine has it (incremental, resumable), scp otherwise. `to` ends up holding what `from` holds, whatever was there before. */
  private async copy(from: string, to: string): Promise<void> {
    const destination = `${this.ssh.user}@${this.ssh.host}:${to}`;
    const shell = ["ssh", ...sshArgs(this.ssh)].map((part) => (/[\s'"]/.test(part) ? quote(part) : part)).join(" ");
    const hasRsync = (await runProgram("sh", ["-c", "command -v rsync"]).catch(() => ({ code: 1 }))).code === 0;
    let result;
    if (hasRsync) {
      await remote(this.ssh, "creating the upload folder", `mkdir -p ${quote(to)}`);
      result = await runProgram("rsync", ["-a", "--delete", "-e", shell, from, destination]);
    } else {
      // `scp -r` into a folder that exists (an interrupted upload's) nests the copy inside it: it goes to a new name, then into place.
      const folder = to.replace(/\/$/, "");
      const upload = `${folder}.upload-${randomBytes(4).toString("hex")}`;
      await remote(this.ssh, "creating the upload folder", `mkdir -p ${quote(posix.dirname(folder))}`);
      result = await runProgram("scp", ["-r", "-P", String(this.ssh.port), "-o", "BatchMode=yes", ...(this.ssh.identityFile ? ["-i", this.ssh.identityFile] : []), ...this.ssh.options.flatMap((option) => ["-o", option]), from.replace(/\/$/, ""), `${this.ssh.user}@${this.ssh.host}:${upload}`]);
      if (result.code === 0) await remote(this.ssh, "moving the upload into place", `rm -rf ${quote(folder)} && mv ${quote(upload)} ${quote(folder)}`);
      else await remoteResult(this.ssh, "removing the partial upload", `rm -rf ${quote(upload)}`).catch(() => undefined);
    }
    if (result.code !== 0) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_TRANSPORT", `copying ${from} to ${destination} failed: ${result.stderr.trim().slice(-2_000)}`, {
        fix: "Check the ssh access (host, user, port, key) and the free space on the host.",
      });
    }
  }

  private async pruneReleases(dir: string, current: string, previous: string | undefined): Promise<void> {
    const keep = this.options.keepReleases ?? 3;
    const listed = (await remote(this.ssh, "listing releases", `ls -1 ${quote(`${dir}/releases`)}`)).split("\n").filter(Boolean).sort().reverse();
    const old = listed.slice(keep).filter((release) => release !== current && release !== previous);
    if (old.length > 0) await remote(this.ssh, "pruning old releases", `cd ${quote(dir)} && rm -rf ${old.flatMap((release) => [quote(`releases/${release}`), quote(`envs/${release}`)]).join(" ")}`);
  }

  /**
   * The runtime packages of dependency sets no kept release links to (about
   * 200 MB each) go with the releases that used them; a folder used within the
   * hour stays, as a deploy from another machine may have just uploaded it.
   */
  private async pruneModules(dir: string, inUse: string): Promise<void> {
    const script =
      `cd ${quote(dir)} && for m in modules/*/; do d=\${m#modules/}; d=\${d%/}; ` +
      `[ -d "modules/$d" ] && [ "$d" != ${quote(inUse)} ] || continue; ` +
      `for r in releases/*/node_modules; do [ "$(readlink "$r")" = "../../modules/$d/node_modules" ] && continue 2; done; ` +
      `[ -z "$(find "modules/$d" -maxdepth 0 -mmin -60)" ] && rm -rf "modules/$d"; done; true`;
    await remote(this.ssh, "pruning unused runtime packages", script);
  }
}

/**
 * The service and folder name an agent id gives when --name is left out. An id of dots alone
 * would name no folder of its own (`/opt/assembly-line/..` is /opt) and is refused.
 */
function releaseName(agentId: string): string {
  const name = agentId.replace(/[^A-Za-z0-9_.-]/g, "-");
  if (name === "." || name === "..") {
    throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `agent id ${JSON.stringify(agentId)} names no release folder of its own on the host (/opt/assembly-line/${name})`, {
      fix: "Pass --name <service name> (letters, digits, '.', '_' and '-'), or give agent.ts another id.",
      details: { agentId },
    });
  }
  return name;
}

interface Rollback {
  /** How it went, for the deploy's error. */
  said: string;
  /** Why the rollback itself failed, when it did. */
  failure?: string;
}

function notReady(how: Exclude<Readiness, "ready">, timeoutMs: number): string {
  return how === "exited" ? "exited before it answered" : `did not answer within ${Math.ceil(timeoutMs / 1000)} s`;
}

function reasonOf(error: unknown): string {
  return isAssemblyLineError(error) ? `${error.code}: ${errorSummary(error)}` : error instanceof Error ? error.message : String(error);
}

/**
 * The deploy's own error, saying how the rollback after it went: a failed rollback is
 * told beside it (message and details.rollbackFailure), never instead of it.
 */
function withRollback(error: unknown, rollback: Rollback, details: Record<string, unknown>): AssemblyLineError {
  const original = isAssemblyLineError(error) ? error : new AssemblyLineError("AL_ERR_DEPLOY_TRANSPORT", `the deploy stopped: ${reasonOf(error)}`, { cause: error });
  return new AssemblyLineError(original.code, `${errorSummary(original)}\nrelease ${String(details.release)} is not serving: ${rollback.said}.`, {
    ...(original.fix ? { fix: original.fix } : {}),
    details: { ...original.details, ...details, ...(rollback.failure !== undefined ? { rollbackFailure: rollback.failure } : {}) },
    cause: original,
  });
}

/** A number as written (JSON.stringify shows NaN and Infinity as null), anything else as JSON. */
function shown(value: unknown): string {
  return typeof value === "number" ? String(value) : JSON.stringify(value);
}

/** Without a logger from the caller: warnings and errors as JSON lines on stderr (the runtime's log format). */
function stderrWarnings(): RuntimeLogger {
  const write = (level: string) => (fields: Record<string, unknown>, msg?: string) => {
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), target: "vps", ...fields, ...(msg === undefined ? {} : { msg }) })}\n`);
  };
  const quiet = () => undefined;
  return { debug: quiet, info: quiet, warn: write("warn"), error: write("error") };
}

/** `KEY='value'` lines: read by systemd's EnvironmentFile and by a POSIX shell alike. */
export function envFile(env: Record<string, string | undefined>, port: number): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || name === "PORT") continue;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
    if (/['\n\r]/.test(value)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `the value of ${name} contains a quote or a line break, which the host's environment file cannot hold`, {
        fix: `Set ${name} on the host some other way, or use a value without ' and line breaks.`,
      });
    }
    lines.push(`${name}='${value}'`);
  }
  lines.push(`PORT='${port}'`, "NODE_ENV='production'");
  return lines.join("\n") + "\n";
}

interface ServiceSpec {
  name: string;
  dir: string;
  /** `<dir>/state`, outside every release, when the runs are kept in the default file state. */
  stateDir: string | undefined;
  port: number;
  manager: ServiceManager;
  node: string;
  cli: string;
  artifactDir: string;
  startArgs: string[];
}

/** The release just deployed and the previous one, which a failed deploy rolls back to. */
const MIN_KEPT_RELEASES = 2;

/** The longest one /readyz probe waits for an answer; less when the ready timeout has less left. */
const PROBE_TRY_MS = 5_000;

/** Starts, stops and checks the release that `<dir>/current` points at. */
class ReleaseService {
  /** systemd's NRestarts of the unit right after the last switch: a higher count means the release crashed. */
  private restartsAtStart = 0;

  constructor(
    private readonly ssh: SshTarget,
    private readonly spec: ServiceSpec,
  ) {}

  private get unitName(): string {
    return `assembly-line-${this.spec.name}`;
  }

  private get command(): string[] {
    const { dir, node, cli, artifactDir, startArgs, stateDir } = this.spec;
    return [node, `${dir}/current/${cli}`, "start", `${dir}/current/${artifactDir}`, ...(stateDir ? ["--state-dir", stateDir] : []), ...startArgs];
  }

  async switchTo(release: string): Promise<void> {
    const { dir } = this.spec;
    await remote(
      this.ssh,
      `switching to release ${release}`,
      `ln -sfn ${quote(`envs/${release}`)} ${quote(`${dir}/env.tmp`)} && mv -T ${quote(`${dir}/env.tmp`)} ${quote(`${dir}/env`)} && ln -sfn ${quote(`releases/${release}`)} ${quote(`${dir}/current.tmp`)} && mv -T ${quote(`${dir}/current.tmp`)} ${quote(`${dir}/current`)}`,
    );
    if (this.spec.manager === "systemd") {
      await remote(this.ssh, "installing the systemd unit", `cat > ${quote(`/etc/systemd/system/${this.unitName}.service`)}`, systemdUnit(this.spec, this.command));
      const restarts = await remote(this.ssh, "restarting the service", `systemctl daemon-reload && systemctl enable --quiet ${this.unitName} && systemctl restart ${this.unitName} && systemctl show -p NRestarts --value ${this.unitName}`);
      this.restartsAtStart = Number.parseInt(restarts.trim(), 10) || 0;
      return;
    }
    await this.stop();
    await remote(
      this.ssh,
      "starting the release",
      `cd ${quote(`${dir}/current/agent`)} && set -a && . ${quote(`${dir}/env`)} && set +a && nohup ${this.command.map(quote).join(" ")} > ${quote(`${dir}/service.log`)} 2>&1 < /dev/null & echo $! > ${quote(`${dir}/service.pid`)}`,
    );
  }

  /**
   * After a first release failed: stop it, and leave nothing that points at it. Otherwise
   * an enabled unit would start the removed release at boot, and the next deploy would
   * read the dangling `current` link as a release to roll back to.
   */
  async remove(): Promise<void> {
    if (this.spec.manager === "systemd") await remoteResult(this.ssh, "removing the systemd unit", `systemctl disable --now --quiet ${this.unitName} && rm -f ${quote(`/etc/systemd/system/${this.unitName}.service`)} && systemctl daemon-reload`);
    else await this.stop();
    await remote(this.ssh, "unlinking the failed release", `rm -f ${quote(`${this.spec.dir}/current`)} ${quote(`${this.spec.dir}/env`)}`);
  }

  async stop(): Promise<void> {
    const { dir } = this.spec;
    if (this.spec.manager === "systemd") {
      await remoteResult(this.ssh, "stopping the service", `systemctl stop ${this.unitName}`);
      return;
    }
    // SIGTERM, then 40 s to drain (the host's shutdown timeout, 30 s by default, and its exit grace), as systemd's stop allows.
    await remote(
      this.ssh,
      "stopping the running release",
      `pid=$(cat ${quote(`${dir}/service.pid`)} 2>/dev/null) || exit 0; kill "$pid" 2>/dev/null || exit 0; for i in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.2; done; kill -9 "$pid" 2>/dev/null; exit 0`,
    );
  }

  /**
   * Poll /readyz from the host itself (the port need not be reachable from here).
   * "exited": the release's process ended first. Under systemd that shows as a restart
   * (Restart=always turns a crash into a loop that never fails the unit), so the deploy
   * stops waiting at the first one instead of running out the timeout.
   *
   * A production host guards /readyz with its bearer token: the probe reads it from the release's
   * own env file, so the token is never part of a command line (`ps` on either machine shows those).
   */
  async waitReady(timeoutMs: number): Promise<Readiness> {
    // Each try is bounded (AL_PROBE_MS, set below): a port that accepts but never answers would
    // otherwise hold one fetch for undici's 300 s header timeout, and the loop for hours.
    const probe = `const ms = Number(process.env.AL_PROBE_MS) || ${PROBE_TRY_MS}; setTimeout(() => process.exit(1), ms + 1000).unref(); const t = process.env.ASSEMBLY_LINE_BEARER_TOKEN; fetch("http://127.0.0.1:${this.spec.port}/readyz", { signal: AbortSignal.timeout(ms), ...(t ? { headers: { authorization: "Bearer " + t } } : {}) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`;
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
    // The whole wait is bounded by a deadline on the host's clock, not by a count of tries.
    const result = await remoteResult(
      this.ssh,
      "waiting for /readyz",
      `set -a && . ${quote(`${this.spec.dir}/env`)} && set +a || exit 1; deadline=$(( $(date +%s) + ${seconds} )); while :; do left=$(( deadline - $(date +%s) )); [ "$left" -gt 0 ] || exit 1; [ "$left" -lt ${PROBE_TRY_MS / 1000} ] && try=$(( left * 1000 )) || try=${PROBE_TRY_MS}; AL_PROBE_MS=$try ${quote(this.spec.node)} -e ${quote(probe)} && exit 0; ${this.exitedCheck()} sleep 0.5; done`,
    );
    return result.code === 0 ? "ready" : result.code === 3 ? "exited" : "timeout";
  }

  /** Shell that exits 3 when the release's process has ended since it was started. */
  private exitedCheck(): string {
    if (this.spec.manager === "process") return `kill -0 "$(cat ${quote(`${this.spec.dir}/service.pid`)})" 2>/dev/null || exit 3;`;
    // Compared with the count read right after the restart: `systemctl restart` of a unit waiting
    // in auto-restart (a crash-looping release being rolled back) keeps its NRestarts. systemd
    // older than 235 has no NRestarts (empty), and SubState still tells.
    return `n=$(systemctl show -p NRestarts --value ${this.unitName}); [ "\${n:-0}" -gt ${this.restartsAtStart} ] && exit 3; systemctl show -p SubState --value ${this.unitName} | grep -qxE 'auto-restart|failed|dead' && exit 3;`;
  }

  /** The release's last log lines; a failure to read them is said in their place, as the deploy's error comes first. */
  async logs(): Promise<string> {
    const script = this.spec.manager === "systemd" ? `journalctl -u ${this.unitName} -n 40 --no-pager` : `tail -n 40 ${quote(`${this.spec.dir}/service.log`)}`;
    return remoteResult(this.ssh, "reading the release's log", script).then(
      (result) => result.stdout,
      (error: unknown) => `(its log lines could not be read: ${reasonOf(error)})`,
    );
  }
}

/** systemd expands `%` specifiers in WorkingDirectory, EnvironmentFile and ExecStart (systemd.unit(5)); `%%` is a literal `%`. */
function unitValue(text: string): string {
  return text.replace(/%/g, "%%");
}

/**
 * One ExecStart word as given: systemd also expands `$NAME` and `${NAME}` there (`$$` is a
 * literal `$`), splits at whitespace outside quotes, unescapes C-style inside them, and
 * reads a lone `;` as the start of another command (systemd.service(5)).
 */
function execWord(word: string): string {
  const escaped = unitValue(word).replace(/\$/g, "$$$$");
  if (escaped === ";") return "\\;";
  return /[\s"'\\]/.test(escaped) || escaped === "" ? JSON.stringify(escaped) : escaped;
}

export function systemdUnit(spec: Pick<ServiceSpec, "name" | "dir">, command: string[]): string {
  return [
    "[Unit]",
    `Description=Assembly Line agent ${spec.name}`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    `WorkingDirectory=${unitValue(`${spec.dir}/current/agent`)}`,
    `EnvironmentFile=${unitValue(`${spec.dir}/env`)}`,
    `ExecStart=${command.map(execWord).join(" ")}`,
    "Restart=always",
    "RestartSec=2",
    "KillSignal=SIGTERM",
    "TimeoutStopSec=40",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}
