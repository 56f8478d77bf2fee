import { optionsSchemaCheck } from "@assemblyline-agents/core";

/** createOtlpSink's options against the config.schema.json the package ships (src/ and dist/ both sit one folder below it). */
export const checkOtlpOptions = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "createOtlpSink",
  code: "AL_ERR_OTLP_CONFIG",
  fix: (names) =>
    `Pass only the options @assemblyline-agents/otlp's config.schema.json lists (${names.join(", ")}), whole numbers for the limits, header names of token characters and single-line string values; check the spelling.`,
});
