// The workspace packages, read from npm itself (the root package.json's
// `workspaces`), so a package added there is checked, packed and installed by
// every script and test without editing a list.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

const npm = (args, options = {}) => execFileSync("npm", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, ...options });

/** Every workspace: { name, version, dir, private, packageJson }. */
export function listWorkspaces() {
  const found = JSON.parse(npm(["query", ".workspace", "--json"]));
  return found
    .map((entry) => ({ name: entry.name, version: entry.version, dir: entry.path, location: entry.location, private: entry.private === true, packageJson: entry }))
    .sort((a, b) => a.location.localeCompare(b.location));
}

/** The workspaces that get published: everything not marked `"private": true`. */
export function publishedWorkspaces() {
  return listWorkspaces().filter((workspace) => !workspace.private);
}

/**
 * `npm pack` every published workspace once into `destination` (each runs its
 * own prepack build). Returns { name, version, dir, tarball } per package.
 */
export function packWorkspaces(destination, workspaces = publishedWorkspaces()) {
  mkdirSync(destination, { recursive: true });
  const args = ["pack", "--json", "--pack-destination", destination, ...workspaces.flatMap((workspace) => ["-w", workspace.name])];
  const packed = JSON.parse(npm(args, { stdio: ["ignore", "pipe", "inherit"] }));
  return workspaces.map((workspace) => {
    const entry = packed.find((candidate) => candidate.name === workspace.name);
    if (!entry) throw new Error(`npm pack produced no tarball for ${workspace.name}`);
    return { ...workspace, tarball: join(destination, entry.filename), files: entry.files.map((file) => file.path) };
  });
}
