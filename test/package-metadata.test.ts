import { existsSync, readFileSync, readdirSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import semver from "semver";
import ts from "typescript";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ESM script shared with `npm run check:packages`, no types.
import { ROOT, listWorkspaces } from "../scripts/workspaces.mjs";

/**
 * The packaging rules of docs/releasing.md, checked for every workspace the
 * root package.json names, so a package added later is held to them without
 * editing this file. `npm run check:packages` adds publint and attw on the
 * packed tarballs.
 */
interface Workspace {
  name: string;
  version: string;
  dir: string;
  location: string;
  private: boolean;
}
interface PackageJson {
  name: string;
  version: string;
  license?: string;
  engines?: { node?: string };
  exports?: Record<string, unknown>;
  files?: string[];
  scripts?: Record<string, string>;
  publishConfig?: { access?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  assemblyLine?: unknown;
}

const workspaces = (listWorkspaces() as Workspace[]).map((workspace) => ({
  ...workspace,
  pkg: JSON.parse(readFileSync(join(workspace.dir, "package.json"), "utf8")) as PackageJson,
  typescript: existsSync(join(workspace.dir, "tsconfig.json")),
}));
const published = workspaces.filter((workspace) => !workspace.private);
const versions = new Map(workspaces.map((workspace) => [workspace.name, workspace.version]));
const CORE = "@assemblyline-agents/core";

/** The .d.ts files under `dir`, recursively. */
function declarationFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".d.ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The package a bare specifier names (`pg`, `@scope/name`), or undefined for a relative path or a Node built-in. */
function bareSpecifierPackage(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) return undefined;
  const name = specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
  return builtinModules.includes(name) ? undefined : name;
}

/** `@types/<name>` as DefinitelyTyped spells it (`@scope/name` -> `@types/scope__name`). */
const typesPackage = (name: string) => `@types/${name.startsWith("@") ? name.slice(1).replace("/", "__") : name}`;

/** Every condition object under `exports`, with its subpath. */
function conditionObjects(exports: unknown, path = "exports"): Array<{ path: string; keys: string[] }> {
  if (typeof exports !== "object" || exports === null) return [];
  const keys = Object.keys(exports);
  const nested = Object.entries(exports).flatMap(([key, value]) => conditionObjects(value, `${path}["${key}"]`));
  return keys.some((key) => !key.startsWith(".")) ? [{ path, keys }, ...nested] : nested;
}

describe("every published workspace can be installed on its own", () => {
  it("finds the workspaces from the root package.json", () => {
    expect(published.map((workspace) => workspace.name)).toContain(CORE);
    expect(published.length).toBeGreaterThanOrEqual(5);
  });

  describe.each(published.map((workspace) => [workspace.name, workspace] as const))("%s", (_name, { dir, pkg, typescript }) => {
    it("has the MIT license, its LICENSE file and a README", () => {
      expect(pkg.license).toBe("MIT");
      expect(readFileSync(join(dir, "LICENSE"), "utf8")).toContain("MIT License, Copyright (c) 2026 The Assembly Line authors");
      expect(existsSync(join(dir, "README.md")), `${dir}/README.md`).toBe(true);
    });

    it("declares engines, public access and the files it ships", () => {
      expect(pkg.engines?.node).toBe(">=20.19");
      expect(pkg.publishConfig?.access).toBe("public");
      expect(pkg.files?.length, "files").toBeGreaterThan(0);
    });

    it("lists types first in every exports condition", () => {
      expect(pkg.exports, "exports").toBeDefined();
      for (const { path, keys } of conditionObjects(pkg.exports)) {
        if (keys.includes("types")) expect(keys[0], `${path} starts with "types"`).toBe("types");
      }
    });

    it("builds before it is packed and ships its sources beside the source maps", () => {
      if (!typescript) return;
      expect(pkg.scripts?.prepack ?? "", "scripts.prepack").toMatch(/\btsc -b\b/);
      expect(pkg.files).toEqual(expect.arrayContaining(["dist", "src"]));
    });

    it("depends on other workspaces by a semver range that includes their current version", () => {
      for (const field of ["dependencies", "optionalDependencies", "peerDependencies", "devDependencies"] as const) {
        for (const [name, range] of Object.entries(pkg[field] ?? {})) {
          const current = versions.get(name);
          if (current === undefined) continue;
          expect(semver.valid(range), `${field}.${name} "${range}" is a range, not an exact version`).toBeNull();
          expect(semver.satisfies(current, range), `${field}.${name} "${range}" includes ${current}`).toBe(true);
        }
      }
    });

    it("installs the types its published declarations import, so a user's skipLibCheck false build finds them", () => {
      const installed = { ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies };
      for (const file of declarationFiles(join(dir, "dist"))) {
        const { importedFiles, typeReferenceDirectives } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
        for (const { fileName } of [...importedFiles, ...typeReferenceDirectives]) {
          const name = bareSpecifierPackage(fileName);
          if (name === undefined || name === pkg.name) continue;
          const where = `${file} imports "${fileName}"`;
          // A package without types of its own is typed by @types/<name>, which the user must get too.
          const needsTypesPackage = !name.startsWith("@types/") && existsSync(join(ROOT, "node_modules", typesPackage(name), "package.json"));
          if (needsTypesPackage) expect(installed[typesPackage(name)], `${where}: ${typesPackage(name)} must be in dependencies or peerDependencies`).toBeDefined();
          else expect(installed[name] ?? installed[typesPackage(name)], `${where}: ${name} must be in dependencies or peerDependencies`).toBeDefined();
        }
      }
    });

    it("takes the SDK as a peer (and dev) dependency when it is a plugin", () => {
      if (pkg.assemblyLine === undefined) return;
      expect(pkg.dependencies?.[CORE], `${CORE} must not be a regular dependency of a plugin`).toBeUndefined();
      expect(pkg.peerDependencies?.[CORE]).toMatch(/^\^/);
      expect(pkg.devDependencies?.[CORE]).toMatch(/^\^/);
    });
  });

  it("references every TypeScript workspace from the root tsconfig.json", () => {
    const references = (JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { references: Array<{ path: string }> }).references.map((reference) => reference.path);
    for (const workspace of workspaces.filter((candidate) => candidate.typescript)) expect(references, workspace.location).toContain(workspace.location);
  });
});
