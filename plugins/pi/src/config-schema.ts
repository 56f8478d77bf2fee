import { AssemblyLineError, optionsSchemaCheck } from "@assemblyline-agents/core";

/** piAgentHarness's options against the config.schema.json the package ships (src/ and dist/ both sit one folder below it). */
const checkAgainstSchema = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "piAgentHarness",
  code: "AL_ERR_PLUGIN_OPTIONS",
  fix: (names) =>
    `Pass only the options @assemblyline-agents/pi's config.schema.json lists (${names.join(", ")}); a models entry takes api, baseUrl, id, provider, name, reasoning, input, cost, maxTokens, headers, compat and apiKeyEnv, its cost prices and maxTokens finite and not negative, and retry takes maxRetries (a whole number), initialDelayMs and maxDelayMs, all finite and not negative. Check the spelling: baseUrl, not baseURL.`,
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
  const models = (options as { models?: unknown } | undefined)?.models;
  refuseUnsupportedEntryFields(models);
  refuseNonFiniteEntryNumbers(models);
  checkAgainstSchema(options);
}

/**
 * A price of Infinity or NaN gets past the schema's `minimum` as a plain message (`must be <= 1.79e+308`), and
 * would make every usage record one the state store refuses, so the token and cost budgets would count nothing:
 * named here with what a valid value is.
 */
function refuseNonFiniteEntryNumbers(models: unknown): void {
  if (typeof models !== "object" || models === null) return;
  for (const [spec, entry] of Object.entries(models)) {
    if (typeof entry !== "object" || entry === null) continue;
    const { cost, maxTokens } = entry as { cost?: unknown; maxTokens?: unknown };
    const prices = typeof cost === "object" && cost !== null ? Object.entries(cost).map(([name, value]) => [`cost.${name}`, value] as const) : [];
    for (const [option, value] of [...prices, ["maxTokens", maxTokens] as const]) {
      if (typeof value !== "number" || Number.isFinite(value)) continue;
      const price = option.startsWith("cost.");
      throw new AssemblyLineError("AL_ERR_PLUGIN_OPTIONS", `piAgentHarness: models["${spec}"].${option} is ${value}; it must be a finite number${price ? " of USD per million tokens" : " of tokens"}.`, {
        fix: price ? `Set models["${spec}"].${option} to the model's price (0.5 for $0.50 per million tokens), or leave it out: a missing price counts as 0.` : `Set models["${spec}"].maxTokens to a whole number such as 16384, or leave it out.`,
        details: { spec, option },
      });
    }
  }
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
