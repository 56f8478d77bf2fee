import { randomBytes } from "node:crypto";
import { existsSync, realpathSync, statSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { builtinModules, createRequire } from "node:module";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Jiti } from "jiti";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { sha256 } from "../canonical-json.js";

/** Files whose imports are read; any other file an import reaches is data (JSON, text, ...). */
const MODULE_FILE = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx)$/;
const TYPESCRIPT = /\.[cm]?tsx?$/;
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** One file named by a module: `import`/`export ... from`, `import()`, `require()`, `new URL(..., import.meta.url)`. */
interface Reference {
  specifier: string;
  /** A module specifier (resolved like an import) or a URL relative to the module (resolved as a plain path). */
  kind: "import" | "url";
}

/**
 * Every file inside the agent folder that the modules the build loaded (`entries`, absolute
 * paths) import, transitively, as posix paths from the folder, sorted. Data files count
 * (`import table from "../data/table.json"`, `new URL("./prompt.md", import.meta.url)`), so
 * the revision covers them and its copy keeps them. Imports are read from each module's
 * syntax, not recorded while it runs, so an `import()` inside `execute` counts as well.
 *
 * Packages (`import x from "zod"`) are left out: they resolve from node_modules as before.
 * A path that leads outside the folder, through a symbolic link, or is absolute is refused
 * with AL_ERR_AGENT_FOLDER: a run paused under this build, continuing on its copy, would not
 * find that file, or would silently load whatever is there later.
 */
export async function listImportedFiles(agentDir: string, entries: Iterable<string>, cacheFile?: string): Promise<string[]> {
  const realRoot = realpathSync(agentDir);
  const inside = (path: string) => path.startsWith(realRoot + sep);
  const shown = (path: string) => relative(realRoot, path).split(sep).join("/");
  const found = new Set<string>();
  const queue = [...entries].map((file) => join(realRoot, relative(agentDir, file)));
  const seen = new Set(queue);
  // No file cache: a cached transform would skip the plugin that collects the references.
  const jiti = (await import("jiti")).createJiti(realRoot + "/", { fsCache: false, moduleCache: false });
  const cache = await ReferenceCache.open(cacheFile);
  while (queue.length > 0) {
    const importer = queue.shift()!;
    if (!MODULE_FILE.test(importer) || /\.d\.[cm]?ts$/.test(importer)) continue;
    const source = await readFile(importer, "utf8");
    const references = cache.get(shown(importer), source) ?? cache.set(shown(importer), source, referencesOf(jiti, importer, source));
    for (const reference of references) {
      const target = locate(jiti, importer, reference, realRoot, shown);
      if (target === undefined) continue;
      const rel = shown(target);
      if (!inside(target) || rel.split("/").some((part) => part === "node_modules") || rel.startsWith(".assembly-line/")) continue;
      found.add(rel);
      if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  }
  await cache.save();
  return [...found].sort();
}

/**
 * The references of each module as last read, by path and hash of its text: parsing needs
 * Babel, which an unchanged folder's build otherwise never loads (jiti keeps transpiled files).
 */
class ReferenceCache {
  private readonly used: Record<string, { hash: string; references: Reference[] }> = {};
  private changed = false;

  private constructor(
    private readonly file: string | undefined,
    private readonly kept: Record<string, { hash: string; references: Reference[] }>,
  ) {}

  static async open(file: string | undefined): Promise<ReferenceCache> {
    const text = file ? await readFile(file, "utf8").catch(() => undefined) : undefined;
    let kept: unknown;
    try {
      kept = text === undefined ? undefined : JSON.parse(text);
    } catch {
      // A damaged cache is read again from the modules.
    }
    const valid = typeof kept === "object" && kept !== null && (kept as { version?: unknown }).version === CACHE_VERSION;
    return new ReferenceCache(file, valid ? (kept as { modules: ReferenceCache["kept"] }).modules : {});
  }

  get(path: string, source: string): Reference[] | undefined {
    const entry = this.kept[path];
    if (entry === undefined || entry.hash !== sha256(source)) return undefined;
    this.used[path] = entry;
    return entry.references;
  }

  set(path: string, source: string, references: Reference[]): Reference[] {
    this.used[path] = { hash: sha256(source), references };
    this.changed = true;
    return references;
  }

  async save(): Promise<void> {
    if (!this.file || (!this.changed && Object.keys(this.used).length === Object.keys(this.kept).length)) return;
    const temp = `${this.file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await mkdir(dirname(this.file), { recursive: true });
      await writeFile(temp, JSON.stringify({ version: CACHE_VERSION, modules: this.used }) + "\n");
      await rename(temp, this.file);
    } catch {
      // Only a saving of time: the next build reads the modules again.
      await rm(temp, { force: true });
    }
  }
}

/** Raise when what a module's references are changes, so an older cache is read again. */
const CACHE_VERSION = 1;

/**
 * The file a reference names, or undefined for a package, a built-in, or a path that does
 * not resolve (an import that fails, fails the same way in every build). Refuses what a
 * revision copy of the folder could not hold.
 */
function locate(jiti: Jiti, importer: string, reference: Reference, realRoot: string, shown: (path: string) => string): string | undefined {
  const { specifier } = reference;
  const from = shown(importer);
  const refuse = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_AGENT_FOLDER", `${from} ${reference.kind === "url" ? "reads" : "imports"} "${specifier}", ${problem}`, { fix });
  };
  let path: string;
  if (reference.kind === "url") {
    if (URL_SCHEME.test(specifier) && !specifier.startsWith("file:")) return undefined;
    path = fileURLToPath(new URL(specifier, pathToFileURL(importer)));
    if (!existsSync(path) || !statSync(path).isFile()) return undefined;
  } else {
    if (specifier.startsWith("node:") || builtinModules.includes(specifier)) return undefined;
    const isPath = specifier.startsWith(".") || isAbsolute(specifier) || specifier.startsWith("file:");
    // A package resolves from node_modules in the revision copy as it does here; the revision does not cover it.
    if (!isPath && !specifier.startsWith("#")) return undefined;
    const resolved = resolveSpecifier(jiti, importer, specifier);
    // package.json "imports" (#data) may map into the folder (the copy keeps package.json) or to a package.
    if (!isPath) return resolved !== undefined && resolved.startsWith(realRoot + sep) ? resolved : undefined;
    if (resolved === undefined) return undefined;
    path = resolved;
  }
  if (isAbsolute(specifier) || specifier.startsWith("file:")) {
    refuse("an absolute path: a run paused under this build would load whatever is at that path when it continues", "Import files of the agent folder by a relative path (./data/table.json), and shared code from a package by name.");
  }
  const lexical = reference.kind === "url" ? path : join(dirname(importer), specifier);
  const real = realpathSync(path);
  if (existsSync(lexical) && realpathSync(lexical) !== lexical) {
    refuse(`a symbolic link to ${real}: the build covers and keeps only the folder's own files`, "Put the file itself in the agent folder (the build copies each file the agent imports into its revision).");
  }
  if (!real.startsWith(realRoot + sep)) {
    refuse(`which is outside the agent folder (${real}): the build keeps a copy of the folder's own files for runs paused under it, so such a run could not load it`, "Move the file into the agent folder, or put shared code in a package (a workspace package or one in node_modules) and import it by name.");
  }
  return real;
}

/** Resolve as jiti does when the module runs; Node's require finds what jiti leaves to it (`../data/table` for table.json). */
function resolveSpecifier(jiti: Jiti, importer: string, specifier: string): string | undefined {
  const found = jiti.esmResolve(specifier, { parentURL: pathToFileURL(importer).href, try: true });
  if (found) return realpathSync(found.startsWith("file:") ? fileURLToPath(found) : found);
  try {
    return realpathSync(createRequire(importer).resolve(specifier));
  } catch {
    return undefined;
  }
}

/**
 * A module's references, read with jiti's own parser (the one that runs the module) through a
 * Babel plugin that sees the syntax before the transform rewrites it. Type-only imports are
 * already gone at that point: they load nothing.
 */
function referencesOf(jiti: Jiti, file: string, source: string): Reference[] {
  const found: Reference[] = [];
  const ownUrl = JSON.stringify(pathToFileURL(file).href);
  const literal = (node: any): string | undefined =>
    node?.type === "StringLiteral" ? node.value : node?.type === "TemplateLiteral" && node.expressions.length === 0 ? node.quasis[0].value.cooked : undefined;
  const add = (node: any, kind: Reference["kind"]) => {
    const specifier = literal(node);
    if (specifier !== undefined) found.push({ specifier, kind });
  };
  const collect = () => ({
    visitor: {
      Program(program: any) {
        program.traverse({
          ImportDeclaration: (path: any) => add(path.node.source, "import"),
          ExportAllDeclaration: (path: any) => add(path.node.source, "import"),
          ExportNamedDeclaration: (path: any) => path.node.source && add(path.node.source, "import"),
          TSImportEqualsDeclaration: (path: any) => add(path.node.moduleReference?.expression, "import"),
          ImportExpression: (path: any) => add(path.node.source, "import"),
          CallExpression: (path: any) => {
            const { callee, arguments: args } = path.node;
            const isRequire = (node: any) => node.type === "Identifier" && node.name === "require";
            const isRequireResolve = callee.type === "MemberExpression" && isRequire(callee.object) && callee.property?.name === "resolve";
            if (callee.type === "Import" || isRequire(callee) || isRequireResolve) add(args[0], "import");
          },
          NewExpression: (path: any) => {
            const { callee, arguments: args } = path.node;
            const base = args[1];
            // jiti has put the module's own URL in place of import.meta.url by now (as a literal identifier).
            const importMetaUrl =
              (base?.type === "MemberExpression" && base.object?.type === "MetaProperty" && base.property?.name === "url") ||
              (base?.type === "Identifier" && base.name === ownUrl) ||
              literal(base) === pathToFileURL(file).href;
            if (callee.type === "Identifier" && callee.name === "URL" && importMetaUrl) add(args[0], "url");
          },
        });
      },
    },
  });
  jiti.transform({ source, filename: file, ts: TYPESCRIPT.test(file), jsx: /x$/.test(file), babel: { plugins: [collect] } });
  return found;
}
