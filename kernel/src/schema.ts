import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";

/** One ajv instance per process; compiled validators are cached by schema object. */
let shared: Ajv | undefined;

export function schemaCompiler(): Ajv {
  // ajv is large and CommonJS: required when the first schema is compiled (a build, a tool's first call),
  // so a process that opens a runtime to read its runs does not load it.
  shared ??= new (createRequire(import.meta.url)("ajv") as typeof import("ajv")).Ajv({ allErrors: true, strict: false });
  return shared;
}

export function compileSchema(schema: unknown): ValidateFunction {
  return schemaCompiler().compile(schema as object);
}

/**
 * A validator that compiles `schema` on its first call, for schemas already known to compile (a built
 * tool's): `errors` holds the last call's errors, as on ajv's own.
 */
export function compileOnFirstCall(schema: unknown): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compileSchema(schema);
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
