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

/** The parts of a schema node the path walk reads. */
interface SchemaNode {
  writeOnly?: boolean;
  $ref?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
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
    const problems = describeProblems(validate.errors, schema, given);
    throw new AssemblyLineError(refusal.code, `${refusal.helper}: ${problems.join("; ")}`, {
      fix: refusal.fix(Object.keys(schema.properties ?? {})),
      details: { problems },
    });
  };
}

/** ajv's errors as lines that name the option: `"maxBatch" is not an option`, `options.timeoutMs must be integer`. */
function describeProblems(errors: ErrorObject[] | null | undefined, schema: OptionsSchema, given: object): string[] {
  const lines = (errors ?? [])
    // A bad key under propertyNames is reported twice (the rule, then "property name must be valid"); the first says more.
    .filter((error) => error.keyword !== "propertyNames")
    .map((error) => {
      // A JSON pointer: its segments, their ~1 and ~0 read back as / and ~ (a model spec's slash).
      const segments = error.instancePath.split("/").slice(1).map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"));
      const secret = secretDepth(schema as SchemaNode, segments);
      if (secret !== undefined) return describeSecretProblem(error, segments, secret, given);
      const at = ["options", ...segments].join(".");
      if (error.keyword === "additionalProperties") {
        const key = JSON.stringify((error.params as { additionalProperty: string }).additionalProperty);
        return error.instancePath === "" ? `${key} is not an option` : `${at} has an unknown key ${key}`;
      }
      const key = (error as ErrorObject & { propertyName?: string }).propertyName;
      return key === undefined ? `${at} ${error.message ?? "is invalid"}` : `${at} key ${JSON.stringify(key)} ${error.message ?? "is invalid"}`;
    });
  return [...new Set(lines)];
}

/**
 * A problem inside a secret option, said without its keys or values: a header written
 * `Authorization: Basic <base64>` would otherwise be quoted whole as a bad key.
 */
function describeSecretProblem(error: ErrorObject, segments: string[], depth: number, given: object): string {
  const at = ["options", ...segments.slice(0, depth)].join(".");
  const message = error.message ?? "is invalid";
  const key = (error as ErrorObject & { propertyName?: string }).propertyName;
  if (segments.length === depth) {
    if (key !== undefined) return `${at} entry ${entryNumber(valueAt(given, segments), key)}: its name ${message}`;
    if (error.keyword === "additionalProperties") {
      return `${at} entry ${entryNumber(valueAt(given, segments), (error.params as { additionalProperty: string }).additionalProperty)} is not a key it takes`;
    }
    return `${at} ${message}`;
  }
  const entry = entryNumber(valueAt(given, segments.slice(0, depth)), segments[depth]!);
  return `${at} entry ${entry}: ${segments.length === depth + 1 && key === undefined ? "its value" : "a part of it"} ${message}`;
}

/** How deep along `segments` the first `writeOnly` schema node sits, if one does. */
function secretDepth(schema: SchemaNode, segments: string[]): number | undefined {
  let node: SchemaNode | undefined = schema;
  for (let depth = 0; node !== undefined; depth += 1) {
    node = resolved(schema, node);
    if (node?.writeOnly === true) return depth;
    if (depth === segments.length || node === undefined) return undefined;
    const segment = segments[depth]!;
    const rest: SchemaNode | boolean | undefined = node.additionalProperties;
    node = node.properties?.[segment] ?? (typeof rest === "object" ? rest : undefined) ?? node.items;
  }
  return undefined;
}

/** A node behind a local `$ref` (`#/definitions/names`); others as they are. */
function resolved(schema: SchemaNode, node: SchemaNode): SchemaNode | undefined {
  if (node.$ref === undefined || !node.$ref.startsWith("#/")) return node;
  let target: unknown = schema;
  for (const part of node.$ref.slice(2).split("/")) target = (target as Record<string, unknown> | undefined)?.[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  return typeof target === "object" && target !== null ? (target as SchemaNode) : undefined;
}

function valueAt(root: object, segments: string[]): unknown {
  let value: unknown = root;
  for (const segment of segments) value = (value as Record<string, unknown> | undefined)?.[segment];
  return value;
}

/** A key's place, counted from 1, in the object (or array) holding it. */
function entryNumber(container: unknown, key: string): number {
  if (Array.isArray(container)) return Number(key) + 1;
  return Object.keys(container ?? {}).indexOf(key) + 1;
}
