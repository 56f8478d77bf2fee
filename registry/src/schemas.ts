import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

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

let ajv: Ajv | undefined;
/** One instance for manifests, registry files and plugins' config schemas; validators are cached per schema. */
export function registryAjv(): Ajv {
  ajv ??= new Ajv({ allErrors: true, strict: false });
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
export const generatedRegistryValidator = (): ValidateFunction => validatorFor(fileURLToPath(new URL("../schemas/generated.schema.json", import.meta.url)));

/** ajv errors as short lines rooted at `root`: `assemblyLine/provides/0 must have required property 'export'`. */
export function describeSchemaErrors(errors: ErrorObject[] | null | undefined, root: string): string[] {
  const lines = (errors ?? [])
    // if/then/else reports a second, vaguer error for the branch it took; the first one says enough.
    .filter((error) => error.keyword !== "if")
    .map((error) => {
      const params = error.params as { additionalProperty?: string; allowedValues?: unknown[] };
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
