import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

/** One ajv instance per process; compiled validators are cached by schema object. */
let shared: Ajv | undefined;

export function schemaCompiler(): Ajv {
  shared ??= new Ajv({ allErrors: true, strict: false });
  return shared;
}

export function compileSchema(schema: unknown): ValidateFunction {
  return schemaCompiler().compile(schema as object);
}

/** ajv errors as short, model- and human-readable lines: `/note must be string`. */
export function describeSchemaErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((error) => {
    const at = error.instancePath === "" ? "input" : `input${error.instancePath}`;
    const extra = error.keyword === "additionalProperties" ? ` (${String((error.params as { additionalProperty?: string }).additionalProperty)})` : "";
    return `${at} ${error.message ?? "is invalid"}${extra}`;
  });
}
