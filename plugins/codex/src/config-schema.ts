import { optionsSchemaCheck } from "@assemblyline-agents/core";

/** codexAgentHarness's options against the config.schema.json the package ships (src/ and dist/ both sit one folder below it). */
export const checkCodexOptions = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "codexAgentHarness",
  code: "AL_ERR_PLUGIN_OPTIONS",
  fix: (names) =>
    `Pass only the options @assemblyline-agents/codex's config.schema.json lists (${names.join(", ")}); config takes TOML values as strings. The model is chosen by the run's model spec (openai-codex/<model>), not by an option.`,
});
