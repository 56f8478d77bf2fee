import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, readdirSync, realpathSync, statSync, type Stats } from "node:fs";
import { cp, lstat, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { AssemblyLineError } from "../errors.js";
import { sourceFileHash } from "../source-hash.js";
import { markModulesCopyUsed, pruneModulesCache } from "./modules-cache.js";

/*
 * A deploy bundle is a folder a plain `node` can run anywhere, with no registry:
 *   <dir>/agent/<every source file the manifest lists>
 *   <dir>/agent/.assembly-line/manifest.json      (sourceRoot "..")
 *   <dir>/node_modules/<the runtime packages and everything they depend on>
 * Packages are copied from the host's own install (workspace links followed,
 * published files only), so the bundle runs the exact versions the host built
 * with. Nothing from the environment is written into it: secrets reach a
 * release as process environment only.
 */

/** The host package whose bin runs `assembly-line start`. */
export const HOST_PACKAGE = "@assemblyline-agents/node";

export interface StageDeployBundleOptions {
  /** The built artifact: `<agentDir>/.assembly-line`. */
  artifactRoot: string;
  /** An empty (or missing) folder to stage into. */
  outDir: string;
  /** Packages to include beyond the agent's package.json dependencies and the Node host. */
  packages?: string[];
  /** Extra files or folders of the agent folder to ship (e.g. a scripted conversation), relative to it. */
  include?: string[];
  /**
   * Where copies of the runtime packages are kept, one folder per dependency
   * digest, reused by later deploys. Default: `<os.tmpdir()>/assembly-line-deploy-modules-<uid>`.
   * It is created 0700; one another user owns, a symbolic link, or one others can
   * write to is refused (AL_ERR_DEPLOY_CONFIG), since what is in it ships as the release's code.
   * Each deploy removes copies beyond the 3 most recently used that no deploy
   * used within the last hour.
   */
  modulesCache?: string;
}

export interface DeployBundle {
  /** The agent part: `agent/` (sources and manifest). */
  dir: string;
  /** The runtime packages: `<modules.dir>/node_modules`, shared by every bundle with the same `modules.digest`. */
  modules: { dir: string; digest: string };
  agentId: string;
  revision: string;
  /** Relative to `dir`. */
  artifactDir: string;
  /** Relative to the app root (the parent of `agent/` and `node_modules/`): the `assembly-line` CLI script. */
  cli: string;
  /** Package names copied, sorted. */
  packages: string[];
  /** A hash of everything in the bundle, for cache keys and release names. */
  digest: string;
}

interface ManifestView {
  agentRevision: string;
  sourceRoot: string;
  agent: { id: string };
  sources: Array<{ file: string; hash: string }>;
}

/** Marks a folder a deploy bundle was written to: only such a folder (or an empty one) is cleared for the next. */
const BUNDLE_MARK = ".assembly-line-bundle";

/** What a bundle folder holds at its top: the staged agent, the packages, and a platform's files beside them. */
const BUNDLE_ENTRIES = new Set([BUNDLE_MARK, "agent", "node_modules", "Dockerfile", ".dockerignore", "fly.toml", "railway.json"]);

/**
 * Check that `outDir` can take a new bundle, refusing what it must not delete: a file, a folder
 * holding the agent or its build (`keep`), or one with files no deploy wrote (a `--out .` or
 * `--out ~` would otherwise be deleted whole). Deletes nothing: `clearBundleFolder` does, once
 * every other check passed.
 */
function checkBundleFolder(outDir: string, keep: string[]): void {
  const refuse = (problem: string, fix = "Name a new or empty folder for the bundle (deploy --out), or one an earlier deploy wrote."): never => {
    throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `the deploy folder ${outDir} ${problem}`, { fix, details: { outDir } });
  };
  if (!existsSync(outDir)) return;
  if (!statSync(outDir).isDirectory()) refuse("is a file");
  const inside = (path: string) => path === outDir || path.startsWith(outDir.endsWith(sep) ? outDir : `${outDir}${sep}`);
  if (keep.some((path) => inside(resolve(path)))) refuse("holds the agent folder or its build, which clearing it would delete");
  if (readdirSync(outDir).length === 0 || existsSync(join(outDir, BUNDLE_MARK))) return;
  if (!isUnmarkedBundle(outDir)) {
    refuse(
      "holds files no deploy wrote, which clearing it would delete",
      `Name a new or empty folder for the bundle (deploy --out). If ${outDir} is a bundle an earlier version wrote (before bundles were marked ${BUNDLE_MARK}), delete it yourself and deploy again.`,
    );
  }
}

/**
 * A bundle written before the mark existed, known by holding nothing a bundle does not: bundle
 * entries at its top, and an `agent/` of the sources its staged manifest lists beside a
 * `.assembly-line/` of that manifest alone (a built agent's also holds the build's .gitignore,
 * its runs, ...). A project folder holding a built agent named `agent/` is not one.
 */
function isUnmarkedBundle(outDir: string): boolean {
  if (!readdirSync(outDir).every((entry) => BUNDLE_ENTRIES.has(entry))) return false;
  const agent = join(outDir, "agent");
  const artifact = join(agent, ".assembly-line");
  if (!existsSync(join(artifact, "manifest.json")) || readdirSync(artifact).join() !== "manifest.json") return false;
  let manifest: Partial<ManifestView>;
  try {
    manifest = JSON.parse(readFileSync(join(artifact, "manifest.json"), "utf8")) as Partial<ManifestView>;
  } catch {
    return false;
  }
  if (manifest.sourceRoot !== ".." || !Array.isArray(manifest.sources)) return false;
  const sources = new Set(manifest.sources.map((source) => source.file.split(/[\\/]/).join(sep)));
  const onlySources = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).every((entry) => {
      const path = join(dir, entry.name);
      if (path === artifact) return true;
      if (entry.isDirectory()) return onlySources(path);
      return entry.isFile() && sources.has(relative(agent, path));
    });
  return onlySources(agent);
}

/** Empty `outDir` for a new bundle: only after `checkBundleFolder` and every other check passed. */
async function clearBundleFolder(outDir: string): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
}

/**
 * Check the paths `include` names inside `agentDir` (deploy --include), before anything is built
 * or cleared: each is relative, inside the agent folder, exists, and leads nowhere outside it
 * through a symbolic link (the copy follows links, so one to ~/.ssh would ship its files).
 */
export function checkIncludes(agentDir: string, include: readonly string[]): void {
  const refuse = (message: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", message, { fix, details: { agentDir } });
  };
  const root = realpathSync(agentDir);
  const within = (real: string) => real === root || real.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
  for (const extra of include) {
    if (extra.trim() === "" || isAbsolute(extra) || extra.split(/[\\/]/).includes("..")) {
      refuse(`include ${JSON.stringify(extra)} (--include) is not a path inside the agent folder`, "List paths relative to the agent folder, e.g. conversations/.");
    }
    const path = join(agentDir, extra);
    if (!existsSync(path)) {
      refuse(`include ${JSON.stringify(extra)} (--include) names nothing in the agent folder ${agentDir}`, `Create ${path}, or leave --include ${extra} out.`);
    }
    const visited = new Set<string>();
    const walk = (logical: string): void => {
      let real: string;
      try {
        real = realpathSync(logical);
      } catch {
        return refuse(`include ${JSON.stringify(extra)} (--include) holds ${relative(agentDir, logical)}, a link to nothing`, `Remove the broken link, or leave --include ${extra} out.`);
      }
      if (!within(real)) {
        refuse(`include ${JSON.stringify(extra)} (--include) leads outside the agent folder: ${relative(agentDir, logical) || logical} is a link to ${real}, whose files the bundle would ship`, `Remove the link or copy what it points at into the agent folder, or leave --include ${extra} out.`);
      }
      if (visited.has(real) || !statSync(real).isDirectory()) return;
      visited.add(real);
      for (const name of readdirSync(logical)) walk(join(logical, name));
    };
    walk(path);
  }
}

/** Copy a built agent and its runtime packages into a self-contained folder. */
export async function stageDeployBundle(options: StageDeployBundleOptions): Promise<DeployBundle> {
  const artifactRoot = resolve(options.artifactRoot);
  const manifestPath = join(artifactRoot, "manifest.json");
  if (!existsSync(manifestPath)) {
    throw new AssemblyLineError("AL_ERR_MANIFEST_MISSING", `no manifest at ${manifestPath} to deploy`, {
      fix: "Run `assembly-line build <agentDir>` first (deploy builds it for you).",
    });
  }
  const manifestText = await readFile(manifestPath, "utf8");
  const manifest = JSON.parse(manifestText) as ManifestView;
  const agentDir = resolve(artifactRoot, manifest.sourceRoot);
  const outDir = resolve(options.outDir);
  // Everything is checked before the folder is cleared: a refusal leaves the last bundle as it was.
  checkBundleFolder(outDir, [artifactRoot, agentDir]);
  const sources: Array<{ file: string; hash: string; bytes: Buffer }> = [];
  for (const source of manifest.sources) {
    if (isAbsolute(source.file) || source.file.split(/[\\/]/).includes("..")) throw staleError(`lists a source ${JSON.stringify(source.file)} outside the agent folder`, agentDir);
    const bytes = await readFile(join(agentDir, source.file)).catch(() => undefined);
    if (bytes === undefined || sourceFileHash(bytes) !== source.hash) {
      throw staleError(`${source.file} is missing or changed after revision ${manifest.agentRevision} was built`, agentDir);
    }
    sources.push({ ...source, bytes });
  }
  checkIncludes(agentDir, options.include ?? []);
  const modulesCache = resolve(options.modulesCache ?? defaultModulesCache());
  await openModulesCache(modulesCache);

  await clearBundleFolder(outDir);
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, BUNDLE_MARK), "A deploy bundle written by assembly-line; the next deploy to this folder replaces it.\n");
  const digest = createHash("sha256");
  for (const source of sources) {
    await mkdir(dirname(join(outDir, "agent", source.file)), { recursive: true });
    await writeFile(join(outDir, "agent", source.file), source.bytes);
    digest.update(source.file).update(source.hash);
  }
  for (const extra of options.include ?? []) {
    await cp(join(agentDir, extra), join(outDir, "agent", extra), { recursive: true, dereference: true });
    digest.update(`include:${extra}`);
  }
  await mkdir(join(outDir, "agent", ".assembly-line"), { recursive: true });
  await writeFile(join(outDir, "agent", ".assembly-line", "manifest.json"), JSON.stringify({ ...(JSON.parse(manifestText) as object), sourceRoot: ".." }, null, 2) + "\n");

  const roots = new Set([HOST_PACKAGE, ...(await declaredDependencies(agentDir)), ...(options.packages ?? [])]);
  const plan = await planPackages([...roots], agentDir);
  const modulesDigest = createHash("sha256").update(plan.map((entry) => `${entry.dest}\0${entry.version}\0${entry.real}\0${contentSignature(entry)}`).join("\n")).digest("hex").slice(0, 16);
  const modulesDir = join(modulesCache, modulesDigest);
  if (await trustedCopy(modulesDir)) {
    await markModulesCopyUsed(modulesDir);
  } else {
    // Staged beside and renamed into place, so a folder named after a digest is always complete.
    const staging = `${modulesDir}.staging-${randomBytes(6).toString("hex")}`;
    try {
      // 0700 whatever the umask: a copy others could write to is not reused (trustedCopy).
      await mkdir(join(staging, "node_modules"), { recursive: true, mode: 0o700 });
      for (const entry of plan) await copyPackage(entry.real, join(staging, "node_modules", entry.dest), entry.pkg);
      await mkdir(dirname(modulesDir), { recursive: true });
      await rename(staging, modulesDir).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST" && error.code !== "ENOTEMPTY") throw error;
      });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  await pruneModulesCache(modulesCache, modulesDigest);
  digest.update(modulesDigest);
  const cli = join("node_modules", ...HOST_PACKAGE.split("/"), "bin", "assembly-line.js");
  if (!existsSync(join(modulesDir, cli))) {
    throw new AssemblyLineError("AL_ERR_DEPLOY_BUILD", `${HOST_PACKAGE} in the bundle has no bin/assembly-line.js`, { fix: `Install ${HOST_PACKAGE} where the agent folder resolves it.` });
  }
  return {
    dir: outDir,
    agentId: manifest.agent.id,
    revision: manifest.agentRevision,
    artifactDir: join("agent", ".assembly-line"),
    cli,
    modules: { dir: modulesDir, digest: modulesDigest },
    packages: plan.map((entry) => entry.pkg.name).sort(),
    digest: digest.digest("hex").slice(0, 16),
  };
}

/**
 * One cache per user: a folder in the shared temp folder that every user's deploys read would
 * let any of them create it first, or put a copy under a digest, and have their code shipped.
 */
function defaultModulesCache(): string {
  const user = process.getuid?.() ?? userInfo().username.replace(/[^A-Za-z0-9_.-]/g, "_");
  return join(tmpdir(), `assembly-line-deploy-modules-${user}`);
}

/** Why a cache folder (or a copy in it) could hold someone else's code; undefined when only this user can have written it. */
function untrustedBecause(stats: Stats): string | undefined {
  if (stats.isSymbolicLink()) return "is a symbolic link";
  if (!stats.isDirectory()) return "is not a folder";
  const uid = process.getuid?.();
  // No uid (Windows): the temp folder is the user's own profile's.
  if (uid === undefined) return undefined;
  if (stats.uid !== uid) return `is owned by another user (uid ${stats.uid}, this deploy runs as ${uid})`;
  if ((stats.mode & 0o022) !== 0) return `can be written by users other than its owner (mode ${(stats.mode & 0o777).toString(8).padStart(3, "0")})`;
  return undefined;
}

/** Create the package cache (0700), or check the one there: its copies are shipped as the release's code. */
async function openModulesCache(dir: string): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 }).then(
    () => undefined,
    (error: unknown) => error,
  );
  // lstat: a link planted where the cache goes must not be followed.
  const stats = await lstat(dir).catch(() => undefined);
  if (stats === undefined) throw created;
  const problem = untrustedBecause(stats);
  if (problem === undefined) return;
  throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `the deploy package cache ${dir} ${problem}, so what it holds may not be the packages this deploy copied, and it is not used`, {
    fix: `Remove ${dir} (a deploy creates it again, readable by you alone; one another user owns, they or an administrator must remove), or point TMPDIR (the default cache's parent) or the modulesCache option at a folder only you can write to.`,
    details: { modulesCache: dir },
  });
}

/**
 * A copy is reused only when this user made it: a folder (no link) they own that no one else
 * can write to, with node_modules likewise. One that is not is removed, to be copied again.
 */
async function trustedCopy(copyDir: string): Promise<boolean> {
  const stats = await lstat(copyDir).catch(() => undefined);
  if (stats === undefined) return false;
  const modules = await lstat(join(copyDir, "node_modules")).catch(() => undefined);
  if (untrustedBecause(stats) === undefined && modules !== undefined && untrustedBecause(modules) === undefined) return true;
  await rm(copyDir, { recursive: true, force: true }).catch((error: unknown) => {
    throw new AssemblyLineError("AL_ERR_DEPLOY_BUILD", `the deploy package cache's copy ${copyDir} ${untrustedBecause(stats) ?? "is incomplete"} and could not be removed: ${(error as Error).message}`, {
      fix: `Remove ${copyDir} and deploy again.`,
      details: { modulesCache: dirname(copyDir) },
    });
  });
  return false;
}

/** `dependencies` of the nearest package.json at or above the agent folder. */
async function declaredDependencies(agentDir: string): Promise<string[]> {
  for (let dir = agentDir; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(await readFile(file, "utf8")) as { dependencies?: Record<string, string> };
      return Object.keys(pkg.dependencies ?? {});
    }
    if (dirname(dir) === dir) return [];
  }
}

interface PackageJson {
  name: string;
  version: string;
  files?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

interface PlannedPackage {
  /** Path under node_modules, e.g. `pg` or `a/node_modules/b`. */
  dest: string;
  real: string;
  version: string;
  pkg: PackageJson;
}

/**
 * `roots` and their dependency closure, resolved the way Node resolves them from
 * the agent folder: hoisted to the top when the name is free there, nested under
 * the dependent when another version holds it. Type packages and optional peers
 * (test runners, build tools) are left out.
 */
async function planPackages(roots: string[], agentDir: string): Promise<PlannedPackage[]> {
  const topLevel = new Map<string, string>(); // name -> real dir placed at the top
  const planned = new Map<string, PlannedPackage>();
  type Item = { name: string; from: string; fromReal: string; destParent: string; optional: boolean };
  const queue: Item[] = roots.map((name) => ({ name, from: agentDir, fromReal: agentDir, destParent: "", optional: false }));
  while (queue.length > 0) {
    const item = queue.shift()!;
    if (item.name.startsWith("@types/")) continue;
    const found = locate(item.name, item.from, item.fromReal);
    if (!found) {
      if (item.optional) continue;
      throw new AssemblyLineError("AL_ERR_DEPLOY_BUILD", `package ${item.name} is not installed where ${item.from} resolves it`, {
        fix: "Run npm install in the agent's project (it must run locally before it deploys).",
      });
    }
    const atTop = topLevel.get(item.name);
    let dest: string;
    if (atTop === undefined || atTop === found.real) {
      topLevel.set(item.name, found.real);
      dest = item.name;
    } else {
      dest = join(item.destParent, item.name);
    }
    if (planned.has(dest)) continue;
    const pkg = JSON.parse(await readFile(join(found.real, "package.json"), "utf8")) as PackageJson;
    planned.set(dest, { dest, real: found.real, version: pkg.version, pkg });
    const childParent = join(dest, "node_modules");
    for (const name of Object.keys(pkg.dependencies ?? {})) queue.push({ name, from: found.logical, fromReal: found.real, destParent: childParent, optional: false });
    for (const name of Object.keys(pkg.optionalDependencies ?? {})) queue.push({ name, from: found.logical, fromReal: found.real, destParent: childParent, optional: true });
    for (const name of Object.keys(pkg.peerDependencies ?? {})) {
      if (pkg.peerDependenciesMeta?.[name]?.optional) continue;
      queue.push({ name, from: found.logical, fromReal: found.real, destParent: childParent, optional: true });
    }
  }
  return [...planned.values()].sort((a, b) => (a.dest < b.dest ? -1 : a.dest > b.dest ? 1 : 0));
}

/**
 * Installed packages are identified by name, version and place; a workspace
 * package changes without a version bump (a rebuild), so its published files'
 * sizes and modification times are part of the digest too.
 */
function contentSignature(entry: PlannedPackage): string {
  if (entry.real.split(sep).includes("node_modules")) return "";
  const hash = createHash("sha256");
  const walk = (path: string, rel: string): void => {
    if (!existsSync(path)) return;
    const stats = statSync(path);
    if (stats.isDirectory()) {
      for (const name of readdirSync(path).sort()) if (name !== "node_modules") walk(join(path, name), `${rel}/${name}`);
    } else {
      hash.update(`${rel}:${stats.size}:${stats.mtimeMs}\n`);
    }
  };
  for (const item of ["package.json", ...(entry.pkg.files ?? ["."])]) walk(join(entry.real, item), item);
  return hash.digest("hex");
}

function locate(name: string, from: string, fromReal: string): { logical: string; real: string } | undefined {
  const candidates = [join(fromReal, "node_modules", name)];
  for (let dir = from; ; dir = dirname(dir)) {
    candidates.push(join(dir, "node_modules", name));
    if (dirname(dir) === dir) break;
  }
  for (const candidate of candidates) {
    if (existsSync(join(candidate, "package.json"))) return { logical: candidate, real: realpathSync(candidate) };
  }
  return undefined;
}

/**
 * A workspace package ships its `files` (as npm publishes it); an installed one
 * everything but nested node_modules. Copied with tar (symlinks followed), which
 * is many times faster than fs.cp on the thousands of small files a closure has.
 */
async function copyPackage(real: string, dest: string, pkg: PackageJson): Promise<void> {
  await mkdir(dest, { recursive: true });
  const installed = real.split(sep).includes("node_modules");
  if (installed || !pkg.files) {
    await tarCopy(real, ["."], dest);
    return;
  }
  await tarCopy(real, ["package.json", ...pkg.files].filter((entry) => existsSync(join(real, entry))), dest);
  // A published file a workspace package copies in at pack time (its prepack script), e.g. a schema kept at the repository root.
  for (const entry of pkg.files.filter((file) => !existsSync(join(real, file)) && !/[*?]/.test(file))) {
    const shared = [dirname(real), dirname(dirname(real))].map((dir) => join(dir, entry)).find((candidate) => existsSync(candidate));
    if (shared) await cp(shared, join(dest, entry), { recursive: true, dereference: true });
  }
}

function tarCopy(from: string, entries: string[], to: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const pack = spawn("tar", ["-C", from, "-ch", "--exclude=./node_modules", "--exclude=node_modules", "--exclude=.git", "-f", "-", ...entries], { stdio: ["ignore", "pipe", "pipe"] });
    const unpack = spawn("tar", ["-C", to, "-xf", "-"], { stdio: ["pipe", "ignore", "pipe"] });
    let errors = "";
    pack.stderr.on("data", (chunk) => (errors += chunk));
    unpack.stderr.on("data", (chunk) => (errors += chunk));
    pack.stdout.pipe(unpack.stdin);
    pack.once("error", reject);
    unpack.once("error", reject);
    unpack.once("close", (code) => {
      if (code === 0 && pack.exitCode === 0) resolvePromise();
      else if (code === 0 && pack.exitCode === null) pack.once("close", (packCode) => (packCode === 0 ? resolvePromise() : reject(copyError(from, errors))));
      else reject(copyError(from, errors));
    });
  });
}

function copyError(from: string, errors: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_DEPLOY_BUILD", `copying ${from} into the deploy bundle failed: ${errors.trim() || "tar failed"}`, { fix: "Check that the package folder is readable and that tar is installed." });
}

function staleError(why: string, agentDir: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_MANIFEST_STALE", `the built manifest ${why}`, { fix: `Run \`assembly-line build ${agentDir}\` again, then deploy.` });
}
