import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import semver from "semver";
import { AssemblyLineError, STATE_FACET_NAMES, type StateFacetName } from "@assemblyline-agents/core";
import { KERNEL_VERSION } from "@assemblyline-agents/runtime";
import { jsonOption, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { envelope } from "../output.js";
import { pluginFiles, scaffoldNames } from "../../scaffold/plugin-files.js";
import { SCAFFOLD_SLOTS, SLOT_TEMPLATES } from "../../scaffold/slot-templates.js";
import { subjectKitFiles } from "../../scaffold/subject-kit-files.js";
import { SUBJECT_KIT_TEMPLATES } from "../../scaffold/subject-kit-templates.js";

/** Every --slot value: the gateway slots, then the kinds whose kit runs on a subject the package ships. */
const KINDS = [...SCAFFOLD_SLOTS.filter((slot) => !(slot in SUBJECT_KIT_TEMPLATES)), ...Object.keys(SUBJECT_KIT_TEMPLATES)];
const USAGE = `assembly-line plugins new <package-name> --slot ${KINDS.join("|")} [--id <id>] [--dir <folder>] [--facets runs,conversations,...]`;
const ID_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** "@acme/assembly-line-s3" -> "s3"; the manifest id when --id is not given. */
function idFromPackageName(packageName: string): string {
  return packageName
    .replace(/^@[^/]+\//, "")
    .replace(/^assembly-?line-(plugin-)?/, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .replace(/^[0-9-]+/, "");
}

function parseFacets(text: string | undefined): StateFacetName[] {
  if (text === undefined) return ["runs"];
  const facets = text.split(",").map((facet) => facet.trim()).filter(Boolean);
  const unknown = facets.filter((facet) => !(STATE_FACET_NAMES as string[]).includes(facet));
  if (unknown.length > 0 || !facets.includes("runs")) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--facets ${text} ${unknown.length > 0 ? `names unknown facets: ${unknown.join(", ")}` : "must include runs"}`, {
      fix: `Pick from ${STATE_FACET_NAMES.join(", ")}; runs is required.`,
    });
  }
  // The manifest's facets must be unique (plugin-schema.json), so a repeated one would scaffold a package its own verify refuses.
  const repeated = [...new Set(facets.filter((facet, position) => facets.indexOf(facet) !== position))];
  if (repeated.length > 0) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--facets ${text} names ${repeated.map((facet) => `"${facet}"`).join(", ")} more than once`, {
      fix: `Name each facet once, e.g. --facets ${[...new Set(facets)].join(",")}.`,
    });
  }
  return facets as StateFacetName[];
}

/** The MIT license text, for the year the package is created; the author puts their name over the placeholder. */
function mitLicense(packageName: string): string {
  return `MIT License

Copyright (c) ${new Date().getFullYear()} the authors of ${packageName}

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`;
}

/**
 * `assembly-line plugins new <name> --slot <slot>`: a plugin package that
 * builds, with its manifest, an adapter skeleton whose methods say they are not
 * implemented, the slot's conformance kit wired into its tests, and a README.
 */
export async function pluginsNewCommand(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const packageName = requirePositional(parsed.positionals, 0, "package-name", USAGE);
  if (!/^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/.test(packageName)) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `"${packageName}" is not a valid npm package name`, { fix: `Use lowercase letters, digits, "-" and ".", optionally scoped: @acme/assembly-line-s3. usage: ${USAGE}` });
  }
  const slot = stringOption(parsed, "slot");
  const subjectTemplate = slot === undefined ? undefined : SUBJECT_KIT_TEMPLATES[slot];
  const template = slot === undefined || subjectTemplate ? undefined : SLOT_TEMPLATES[slot as keyof typeof SLOT_TEMPLATES];
  if (!template && !subjectTemplate) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", slot === undefined ? "missing --slot" : `--slot ${slot} is not a slot a plugin can provide`, { fix: `Pick one of ${KINDS.join(", ")}. usage: ${USAGE}` });
  }
  const id = stringOption(parsed, "id") ?? idFromPackageName(packageName);
  if (!ID_PATTERN.test(id)) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `plugin id "${id}" is not kebab-case`, { fix: `Pass --id <id>, e.g. --id acme-store (lowercase letters and digits, "-" between words).` });
  }
  if (parsed.values.facets !== undefined && template?.slot !== "state") throw new AssemblyLineError("AL_ERR_CLI_USAGE", "--facets applies to --slot state only", { fix: `usage: ${USAGE}` });
  const facets = parseFacets(stringOption(parsed, "facets"));
  const dir = resolve(stringOption(parsed, "dir") ?? packageName.replace(/^@[^/]+\//, ""));
  if (existsSync(dir) && !statSync(dir).isDirectory()) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--dir ${dir} is a file, not a folder`, { fix: "Pick a new folder with --dir <folder>." });
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${dir} already exists and is not empty`, { fix: "Pick a new folder with --dir <folder>, or remove this one." });
  }

  // The kernel and SDK move together within a minor: the new plugin fits this one and what follows in it.
  const kernel = semver.parse(KERNEL_VERSION)!;
  const range = `^${kernel.major}.${kernel.minor}.0`;
  const where = relative(process.cwd(), dir) || ".";
  const write = async (files: Record<string, string>) => {
    // package.json says "license": "MIT"; the license text must ship with the package for that to hold.
    files["LICENSE"] ??= mitLicense(packageName);
    for (const [file, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, file)), { recursive: true });
      await writeFile(join(dir, file), text);
    }
  };
  if (subjectTemplate) {
    const adapterFiles = pluginFiles({ packageName, id, template: SLOT_TEMPLATES.blob!, facets, kernelRange: range, coreRange: range });
    const files = subjectKitFiles({ packageName, id, kernelRange: range, coreRange: range }, subjectTemplate, { tsconfig: adapterFiles["tsconfig.json"]!, gitignore: adapterFiles[".gitignore"]! });
    await write(files);
    if (jsonOption(parsed)) {
      io.out(envelope({ packageName, id, slot, kind: subjectTemplate.kind, contract: subjectTemplate.contract, kit: subjectTemplate.kit, dir, files: Object.keys(files).sort() }));
      return 0;
    }
    io.out(`created ${packageName} in ${where}: plugin "${id}", a ${subjectTemplate.kind} (${subjectTemplate.contract}) checked by ${subjectTemplate.kit} on the subject in src/testkit.ts`);
    io.out(`next:`);
    io.out(`  cd ${where} && npm install`);
    io.out(`  implement src/${subjectTemplate.file}.ts (it throws "not implemented yet" until then) and adapt src/testkit.ts to your provider`);
    io.out(`  npm run build && npm test`);
    io.out(`  npm run verify      (assembly-line plugins verify .)`);
    return 0;
  }
  const adapterTemplate = template!;
  const request = { packageName, id, template: adapterTemplate, facets, kernelRange: range, coreRange: range };
  const files = pluginFiles(request);
  await write(files);
  const names = scaffoldNames(request);
  if (jsonOption(parsed)) {
    io.out(envelope({ packageName, id, slot: adapterTemplate.slot, contract: adapterTemplate.contract, dir, className: names.className, helper: names.helper, files: Object.keys(files).sort() }));
    return 0;
  }
  io.out(`created ${packageName} in ${where}: plugin "${id}", ${adapterTemplate.slot} adapter ${names.className} (${adapterTemplate.contract}), helper ${names.helper}()`);
  io.out(`next:`);
  io.out(`  cd ${where} && npm install`);
  io.out(`  implement ${names.className} in src/${adapterTemplate.file}.ts (every method rejects with "not implemented yet" until then)`);
  io.out(`  npm run build && npm test`);
  io.out(`  npm run verify      (assembly-line plugins verify .)`);
  return 0;
}
