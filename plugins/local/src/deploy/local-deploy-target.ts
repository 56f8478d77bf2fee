import { AssemblyLineError, sourceFileHash, type DeployTarget } from "@assemblyline-agents/core";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/*
 * A deployment is a self-contained copy of one built revision:
 *   <deployments>/<agentRevision>/.assembly-line/manifest.json
 *   <deployments>/<agentRevision>/<every source file the manifest lists>
 * so `<deployments>/<rev>/.assembly-line` is itself an artifact root a host can
 * load. It is staged in a temp folder and renamed into place, so a folder named
 * after a revision is always complete; deploying the same revision again reuses
 * it. The deployments folder sits beside the artifact root and starts with ".",
 * so the compiler does not count it as agent source.
 */

const MANIFEST_FILE = "manifest.json";
const ARTIFACT_DIR = ".assembly-line";
const DEPLOYMENTS_DIR = ".assembly-line-deployments";
const CURRENT_FILE = "CURRENT";
/** Revisions are compiler-made (`rev_<hex>`); anything else must not become a folder name. */
const REVISION = /^[A-Za-z0-9_-]{1,128}$/;

export interface LocalDeployTargetOptions {
  /** Where deployments go. Default: `<artifactRoot>/../.assembly-line-deployments`. */
  directory?: string;
}

interface ManifestView {
  agentRevision: string;
  sourceRoot: string;
  sources: Array<{ file: string; hash: string }>;
}

/** Copies a built artifact into a local deployments folder, one folder per revision. */
export class LocalDeployTarget implements DeployTarget {
  readonly name = "local";

  constructor(private readonly options: LocalDeployTargetOptions = {}) {}

  /** Returns the revision as the deployment id and the deployment folder as a file: URL. */
  async deploy(args: { artifactRoot: string; env: Record<string, string | undefined> }): Promise<{ url?: string; id: string }> {
    const artifactRoot = resolve(args.artifactRoot);
    const manifestPath = join(artifactRoot, MANIFEST_FILE);
    if (!existsSync(manifestPath)) {
      throw new AssemblyLineError("AL_ERR_MANIFEST_MISSING", `no manifest at ${manifestPath} to deploy`, {
        fix: "Run `assembly-line build <agentDir>` and deploy <agentDir>/.assembly-line.",
        details: { artifactRoot },
      });
    }
    const manifestText = await readFile(manifestPath, "utf8");
    const manifest = readManifest(manifestText, manifestPath);
    const sourceRoot = resolve(artifactRoot, manifest.sourceRoot);
    const deployments = resolve(this.options.directory ?? join(artifactRoot, "..", DEPLOYMENTS_DIR));
    const target = join(deployments, manifest.agentRevision);

    if (!existsSync(target)) {
      const staging = `${target}.staging-${randomBytes(6).toString("hex")}`;
      try {
        for (const source of manifest.sources) {
          const bytes = await readFile(join(sourceRoot, source.file)).catch(() => undefined);
          // Checked by the compiler's own hash (text with CRLF as LF, other files byte for byte); the bytes are copied untouched.
          if (bytes === undefined || sourceFileHash(bytes) !== source.hash) {
            throw new AssemblyLineError("AL_ERR_MANIFEST_STALE", `${source.file} is missing or changed after revision ${manifest.agentRevision} was built`, {
              fix: `Run \`assembly-line build ${sourceRoot}\` again, then deploy.`,
              details: { file: source.file, revision: manifest.agentRevision },
            });
          }
          const copy = join(staging, source.file);
          await mkdir(dirname(copy), { recursive: true });
          await writeFile(copy, bytes);
        }
        const copiedManifest = { ...(JSON.parse(manifestText) as Record<string, unknown>), sourceRoot: ".." };
        await mkdir(join(staging, ARTIFACT_DIR), { recursive: true });
        await writeFile(join(staging, ARTIFACT_DIR, MANIFEST_FILE), JSON.stringify(copiedManifest, null, 2) + "\n");
        await rename(staging, target).catch((error: NodeJS.ErrnoException) => {
          // Another deploy of the same revision finished first; its copy is identical.
          if (error.code !== "EEXIST" && error.code !== "ENOTEMPTY") throw error;
        });
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    }
    // CURRENT names the last deployed revision, for a host that serves "the" deployment.
    const pointer = join(deployments, `${CURRENT_FILE}.tmp-${randomBytes(6).toString("hex")}`);
    await writeFile(pointer, `${manifest.agentRevision}\n`);
    await rename(pointer, join(deployments, CURRENT_FILE));
    return { id: manifest.agentRevision, url: pathToFileURL(target).href };
  }
}

function readManifest(text: string, manifestPath: string): ManifestView {
  const invalid = (why: string): never => {
    throw new AssemblyLineError("AL_ERR_MANIFEST_VERSION", `${manifestPath} ${why}`, {
      fix: "Rebuild the agent with this runtime's `assembly-line build`, then deploy.",
      details: { manifestPath },
    });
  };
  let manifest: Partial<ManifestView>;
  try {
    manifest = JSON.parse(text) as Partial<ManifestView>;
  } catch {
    return invalid("is not JSON");
  }
  if (typeof manifest.agentRevision !== "string" || !REVISION.test(manifest.agentRevision)) return invalid("has no usable agentRevision");
  if (typeof manifest.sourceRoot !== "string") return invalid("has no sourceRoot");
  if (!Array.isArray(manifest.sources)) return invalid("has no sources list");
  for (const source of manifest.sources) {
    const file = (source as { file?: unknown } | null)?.file;
    const ok = typeof file === "string" && file !== "" && !isAbsolute(file) && !file.split(/[\\/]/).includes("..");
    if (!ok || typeof source.hash !== "string") return invalid(`lists a source ${JSON.stringify(file)} that is not a relative path inside the agent folder`);
  }
  return manifest as ManifestView;
}
