import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import semver from "semver";
import { isBoundedRange } from "./bounded-range.js";

/** The registry package's own folder (index.json, generated.json, schemas/). */
export const REGISTRY_DIR = fileURLToPath(new URL("..", import.meta.url));

/**
 * plugin-schema.json lives at the repository root, beside the packages it
 * describes; a published registry package carries a copy in its own folder.
 * The root copy is looked for first: `npm pack` leaves a copy in the package
 * folder only while it packs, and a process reading the schema then must not
 * pick a file that is about to vanish.
 */
export const PLUGIN_SCHEMA_FILE = [new URL("../../plugin-schema.json", import.meta.url), new URL("../plugin-schema.json", import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((file) => existsSync(file)) ?? fileURLToPath(new URL("../../plugin-schema.json", import.meta.url));

/** Formats the registry's own schemas use, checked by semver rather than a pattern. */
const SEMVER_FORMATS: Record<string, { validate: (value: string) => boolean; says: string }> = {
  semver: { validate: (value) => semver.valid(value) !== null, says: "must be a semver version (e.g. 1.2.0)" },
  // The loader's rule for assemblyLine.kernel, so a listing never offers a plugin the loader refuses.
  "kernel-range": {
    validate: isBoundedRange,
    says: 'must be a bounded semver range, as the loader requires of assemblyLine.kernel (e.g. ^0.1.0 or ">=0.1.0 <0.3.0"; no "*", "x", "latest", empty or open-ended range)',
  },
};

let ajv: Ajv | undefined;
/** One instance for manifests, registry files and plugins' config schemas; validators are cached per schema. */
export function registryAjv(): Ajv {
  if (!ajv) {
    // verbose: an error carries the schema that raised it, whose description can say why (describeSchemaErrors).
    ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
    for (const [name, format] of Object.entries(SEMVER_FORMATS)) ajv.addFormat(name, { type: "string", validate: format.validate });
  }
  return ajv;
}

const validators = new Map<string, ValidateFunction>();
function validatorFor(file: string): ValidateFunction {
  let validate = validators.get(file);
  if (!validate) {
    validate = registryAjv().compile(JSON.parse(readFileSync(file, "utf8")) as object);
    validators.set(file, validate);
  }
  return validate;
}

export const pluginManifestValidator = (): ValidateFunction => validatorFor(PLUGIN_SCHEMA_FILE);
export const registryIndexValidator = (): ValidateFunction => validatorFor(fileURLToPath(new URL("../schemas/index.schema.json", import.meta.url)));
/** generated.schema.json takes the facet names from plugin-schema.json's provide definition (by $ref), so that schema is added first. */
export const generatedRegistryValidator = (): ValidateFunction => {
  pluginManifestValidator();
  return validatorFor(fileURLToPath(new URL("../schemas/generated.schema.json", import.meta.url)));
};

/**
 * ajv errors as short lines rooted at `root`: `assemblyLine/provides/0 must have required property 'export'`.
 * A schema that forbids a value with `not` says why in its description, which replaces ajv's
 * "must NOT be valid": `assemblyLine/provides/0/facets: only a state adapter lists facets ...`.
 */
export function describeSchemaErrors(errors: ErrorObject[] | null | undefined, root: string): string[] {
  const lines = (errors ?? [])
    // if/then/else reports a second, vaguer error for the branch it took; the first one says enough.
    .filter((error) => error.keyword !== "if")
    .map((error) => {
      const params = error.params as { additionalProperty?: string; allowedValues?: unknown[]; format?: string };
      const format = error.keyword === "format" && params.format ? SEMVER_FORMATS[params.format] : undefined;
      if (format) return `${root}${error.instancePath} ${format.says}`;
      const why = error.keyword === "not" ? (error.parentSchema as { description?: unknown } | undefined)?.description : undefined;
      if (typeof why === "string") return `${root}${error.instancePath}: ${why}`;
      const extra =
        error.keyword === "additionalProperties"
          ? ` (${String(params.additionalProperty)})`
          : error.keyword === "enum" && params.allowedValues
            ? ` (${params.allowedValues.join(", ")})`
            : "";
      return `${root}${error.instancePath} ${error.message ?? "is invalid"}${extra}`;
    });
  return [...new Set(lines)];
}
