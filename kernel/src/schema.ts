import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";

/**
 * What a compiler does with a `format` it does not know. An author's schema is refused: a format nobody
 * checks lets through what the author meant to keep out. One the author cannot change is left unchecked
 * there: a provider's (an OpenAPI document's `unix-time`, which its service checks), or one an earlier
 * build accepted (its revision keeps running).
 */
export type UnknownFormats = "refuse" | "ignore";

/**
 * One ajv instance per process and rule, with ajv-formats' formats. It keeps no schema it compiled
 * (compileSchema): schemas come from many agents, builds and models into one process, so a `$id`
 * kept from one would refuse the next schema with that id, and each model-sent schema kept would
 * stay in memory for the life of the process.
 */
const compilers: Partial<Record<UnknownFormats, Ajv>> = {};

export function schemaCompiler(unknownFormats: UnknownFormats = "refuse"): Ajv {
  return (compilers[unknownFormats] ??= newCompiler(unknownFormats));
}

function newCompiler(unknownFormats: UnknownFormats): Ajv {
  // ajv is large and CommonJS: required when the first schema is compiled (a build, a tool's first call),
  // so a process that opens a runtime to read its runs does not load it.
  const require = createRequire(import.meta.url);
  const { Ajv } = require("ajv") as typeof import("ajv");
  const addFormats = (require("ajv-formats") as typeof import("ajv-formats")).default;
  // strict: false lets a schema carry keywords ajv does not know (`example`, `x-*`, a provider's own), ignored.
  const ajv: Ajv = new Ajv({
    allErrors: true,
    strict: false,
    addUsedSchema: false,
    logger: { log: console.log, warn: (...args: unknown[]): void => onWarning(ajv, unknownFormats, args), error: console.error },
  });
  addFormats(ajv);
  return ajv;
}

/* Without strict mode ajv passes over a format it does not know, saying so only in this warning. */
function onWarning(ajv: Ajv, unknownFormats: UnknownFormats, args: unknown[]): void {
  const unknown = /^unknown format "(.*)" ignored in schema at path "(.*)"$/.exec(String(args[0]));
  if (!unknown) console.warn(...args);
  else if (unknownFormats === "refuse") {
    const [, format, path] = unknown;
    throw new Error(
      `unknown format "${format}" at ${path}: no value would be checked against it. Use one of the formats the runtime checks (${Object.keys(ajv.formats).join(", ")}), or drop "format" and check the value with "pattern".`,
    );
  }
}

/** Validators by schema object, held only while the schema is: one object is compiled once, and none is kept for good. */
const validators: Record<UnknownFormats, WeakMap<object, ValidateFunction>> = { refuse: new WeakMap(), ignore: new WeakMap() };

/** A validator for `schema` (ajv's own cache of it is dropped, see schemaCompiler). */
export function compileSchema(schema: unknown, unknownFormats: UnknownFormats = "refuse"): ValidateFunction {
  const ajv = schemaCompiler(unknownFormats);
  if (typeof schema !== "object" || schema === null) return ajv.compile(schema as object);
  const known = validators[unknownFormats].get(schema);
  if (known) return known;
  try {
    const validate = ajv.compile(schema);
    validators[unknownFormats].set(schema, validate);
    return validate;
  } finally {
    ajv.removeSchema(schema);
  }
}

/**
 * A validator that compiles `schema` on its first call, for schemas already known to compile (a built
 * tool's): `errors` holds the last call's errors, as on ajv's own.
 */
export function compileOnFirstCall(schema: unknown): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compileSchema(schema, "ignore");
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}

/** ajv errors as short, model- and human-readable lines: `/note must be string`. */
export function describeSchemaErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((error) => {
    const at = error.instancePath === "" ? "input" : `input${error.instancePath}`;
    const extra = error.keyword === "additionalProperties" ? ` (${String((error.params as { additionalProperty?: string }).additionalProperty)})` : "";
    return `${at} ${error.message ?? "is invalid"}${extra}`;
  });
}
