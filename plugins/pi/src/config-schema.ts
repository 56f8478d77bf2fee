import { optionsSchemaCheck } from "@assemblyline-agents/core";

/** piAgentHarness's options against the config.schema.json the package ships (src/ and dist/ both sit one folder below it). */
export const checkPiOptions = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "piAgentHarness",
  code: "AL_ERR_PLUGIN_OPTIONS",
  fix: (names) =>
    `Pass only the options @assemblyline-agents/pi's config.schema.json lists (${names.join(", ")}); a models entry takes api, baseUrl, id, provider, name, reasoning, input, cost, contextWindow, maxTokens, headers, compat and apiKeyEnv, and retry takes maxRetries (a whole number), initialDelayMs and maxDelayMs, all finite and not negative. Check the spelling: baseUrl, not baseURL.`,
});
