import { optionsSchemaCheck } from "@assemblyline-agents/core";

/** createConnections's options against the config.schema.json the package ships (src/ and dist/ both sit one folder below it). */
export const checkConnectionsOptions = optionsSchemaCheck(new URL("../config.schema.json", import.meta.url), {
  helper: "createConnections",
  code: "AL_ERR_CONNECTION_DEFINITION",
  fix: (names) =>
    `Pass only the options @assemblyline-agents/connections's config.schema.json lists (${names.join(", ")}); name each connection in snake_case (github, weather_api), since its tools become <connection>__<tool>.`,
});
