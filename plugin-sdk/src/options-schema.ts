import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ErrorObject, ValidateFunction } from "ajv";
import { AssemblyLineError, type ErrorCode } from "./errors.js";

/** How a factory's refusal reads: its name, its error code, and the fix given the options its schema lists. */
export interface OptionsSchemaRefusal {
  /** The factory, as the user calls it: `createOtlpSink`. */
  helper: string;
  code: ErrorCode;
  fix(optionNames: string[]): string;
}

interface OptionsSchema {
  properties?: Record<string, unknown>;
  required?: string[];
}

/**
 * A check of a plugin factory's options against the JSON Schema its package ships (its
 * config.schema.json, `schemaFile`), for factories called directly rather than through a
 * gateway slot (whose options the registry checks): an unknown key, a typo, would
 * otherwise be ignored without a word. A key whose value is undefined counts as not given.
 * The schema is read, and ajv loaded, on the first call that has something to check.
 */
export function optionsSchemaCheck(schemaFile: URL, refusal: OptionsSchemaRefusal): (options: object | undefined) => void {
  let schema: OptionsSchema | undefined;
  let validate: ValidateFunction | undefined;
  return (options) => {
    const given = Object.fromEntries(Object.entries(options ?? {}).filter(([, value]) => value !== undefined));
    schema ??= JSON.parse(readFileSync(schemaFile, "utf8")) as OptionsSchema;
    // Nothing given satisfies a schema that requires nothing: ajv (large, CommonJS) stays unloaded.
    if (Object.keys(given).length === 0 && (schema.required ?? []).length === 0) return;
    validate ??= new (createRequire(import.meta.url)("ajv") as typeof import("ajv")).Ajv({ allErrors: true, strict: false }).compile(schema);
    if (validate(given)) return;
    const problems = describeProblems(validate.errors);
    throw new AssemblyLineError(refusal.code, `${refusal.helper}: ${problems.join("; ")}`, {
      fix: refusal.fix(Object.keys(schema.properties ?? {})),
      details: { problems },
    });
  };
}

/** ajv's errors as lines that name the option: `"maxBatch" is not an option`, `options.timeoutMs must be integer`. */
function describeProblems(errors: ErrorObject[] | null | undefined): string[] {
  const lines = (errors ?? [])
    // A bad key under propertyNames is reported twice (the rule, then "property name must be valid"); the first says more.
    .filter((error) => error.keyword !== "propertyNames")
    .map((error) => {
      // A JSON pointer: its segments joined with dots, their ~1 and ~0 read back as / and ~ (a model spec's slash).
      const at = ["options", ...error.instancePath.split("/").slice(1).map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"))].join(".");
      if (error.keyword === "additionalProperties") {
        const key = JSON.stringify((error.params as { additionalProperty: string }).additionalProperty);
        return error.instancePath === "" ? `${key} is not an option` : `${at} has an unknown key ${key}`;
      }
      const key = (error as ErrorObject & { propertyName?: string }).propertyName;
      return key === undefined ? `${at} ${error.message ?? "is invalid"}` : `${at} key ${JSON.stringify(key)} ${error.message ?? "is invalid"}`;
    });
  return [...new Set(lines)];
}
