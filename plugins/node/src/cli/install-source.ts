import npa from "npm-package-arg";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** What `plugins add` checks, and what it gives npm install once the check passed. */
export interface InstallSource {
  /** The spec `npm pack` fetches for the check, or the folder it reads. */
  readonly check: string;
  /** The dependency name npm saves the package under, when the spec names it. */
  readonly name?: string;
  /** The spec npm install gets after the check passed release `checkedVersion`. */
  install(checkedVersion: string): string;
}

/**
 * A `--from <npm spec>`, read the way npm reads it. A registry spec (a name,
 * version, range, tag or `alias@npm:name@range`) installs the version the
 * check fetched, since npm would resolve a range or tag again and take a
 * release published after the check. A file or folder is made absolute, so
 * the check and npm install (which runs in the project) read the same path.
 * git and remote tarball URLs are installed as given: npm fetches them again
 * (docs/plugins.md says what that leaves unpinned).
 */
export function readFromSpec(from: string, usage: string): InstallSource {
  let spec: npa.Result;
  try {
    spec = npa(from, process.cwd());
  } catch (error) {
    throw refused(from, (error as Error).message, usage);
  }
  if (spec.registry) {
    const name = spec.name;
    if (!name) throw refused(from, "it names no package", usage);
    if (spec.type === "alias") {
      const target = (spec as npa.AliasResult).subSpec.name;
      if (!target) throw refused(from, "its alias names no package", usage);
      return { check: from, name, install: (version) => `${name}@npm:${target}@${version}` };
    }
    return { check: from, name, install: (version) => `${name}@${version}` };
  }
  if ((spec.type === "file" || spec.type === "directory") && spec.fetchSpec) {
    const path = spec.fetchSpec;
    return { check: path, install: () => path };
  }
  return { check: from, install: () => from };
}

function refused(from: string, reason: string, usage: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_CLI_USAGE", `--from ${JSON.stringify(from)} is not an npm package spec: ${reason}`, {
    fix: `Pass what npm install takes: name, name@1.2.3, name@^1.2.0, name@latest, alias@npm:name@^1.2.0, a git or tarball URL, or a path. usage: ${usage}`,
  });
}
