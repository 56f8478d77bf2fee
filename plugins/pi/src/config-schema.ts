import { AssemblyLineError, optionsSchemaCheck } from "@assemblyline-agents/core";

/** piAgentHarness's options against the config.schema.json the package ships (src/ and dist/ both sit one folder below it). */
const checkAgainstSchema = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "piAgentHarness",
  code: "AL_ERR_PLUGIN_OPTIONS",
  fix: (names) =>
    `Pass only the options @assemblyline-agents/pi's config.schema.json lists (${names.join(", ")}); a models entry takes api, baseUrl, id, provider, name, reasoning, input, cost, maxTokens, headers, compat and apiKeyEnv, and retry takes maxRetries (a whole number), initialDelayMs and maxDelayMs, all finite and not negative. Check the spelling: baseUrl, not baseURL.`,
});

/**
 * Fields of pi-ai's Model the engine does not act on yet, with what happens
 * instead: named in their own refusal, since a host that sets one expects it
 * to do something.
 */
const UNSUPPORTED_ENTRY_FIELDS: Record<string, string> = {
  contextWindow:
    "the engine neither trims nor refuses a context by the model's size; a context too long for the model fails with the provider's own error",
};

/** Options refused before any request: unsupported fields by name, then anything config.schema.json does not allow. */
export function checkPiOptions(options: object | undefined): void {
  refuseUnsupportedEntryFields((options as { models?: unknown } | undefined)?.models);
  checkAgainstSchema(options);
}

function refuseUnsupportedEntryFields(models: unknown): void {
  if (typeof models !== "object" || models === null) return;
  for (const [spec, entry] of Object.entries(models)) {
    if (typeof entry !== "object" || entry === null) continue;
    for (const [field, instead] of Object.entries(UNSUPPORTED_ENTRY_FIELDS)) {
      if ((entry as Record<string, unknown>)[field] === undefined) continue;
      throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", `piAgentHarness: models["${spec}"].${field} is not supported yet: ${instead}.`, {
        fix: `Remove ${field} from models["${spec}"].`,
        details: { spec, option: field },
      });
    }
  }
}
