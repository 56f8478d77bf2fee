import { describe, expect, it } from "vitest";
import { codexAgentHarness, codexPlugin } from "../src/index.js";

describe("codexAgentHarness's options, checked against config.schema.json", () => {
  it("refuses a misspelt or unknown option, naming it, instead of ignoring it", () => {
    const refusal = () => codexAgentHarness({ modle: "gpt-5.1-codex", bogus: true } as never);
    expect(refusal).toThrow(expect.objectContaining({ code: "AL_ERR_PLUGIN_OPTIONS" }));
    expect(refusal).toThrow(/codexAgentHarness: "modle" is not an option; "bogus" is not an option/);
    expect(refusal).toThrow(/fix: .*\(command, config, env\).*model spec/);
  });

  it("refuses them through codexPlugin() too, and values of the wrong type", () => {
    expect(() => codexPlugin({ cmd: "/usr/bin/codex" } as never)).toThrow(/"cmd" is not an option/);
    expect(() => codexAgentHarness({ config: { model_reasoning_effort: 3 } } as never)).toThrow(/options.config.model_reasoning_effort must be string/);
    expect(() => codexAgentHarness({ command: "" })).toThrow(/options.command must NOT have fewer than 1 characters/);
  });

  it("refuses config keys the route decides: the model, and the switches that keep Codex's own tools off", () => {
    // The run's model spec names the model; Codex would be given it on every turn anyway.
    expect(() => codexAgentHarness({ config: { model: '"o3"' } })).toThrow(/codexAgentHarness: config\.model is not an option: the run's model spec chooses the model/);
    // Turned back on, Codex's own tools would act outside the runtime's pipeline (approvals, budgets, the journal).
    for (const key of ["web_search", "tools.web_search", "features.shell_tool", "features.unified_exec", "features.multi_agent_v2", "features.memories", "features"]) {
      expect(() => codexAgentHarness({ config: { [key]: "true" } }), key).toThrow(expect.objectContaining({ code: "AL_ERR_PLUGIN_OPTIONS", message: expect.stringContaining(`config.${key} is not an option: Codex's own tools stay off`) }));
    }
    expect(codexAgentHarness({ config: { model_reasoning_effort: '"high"', "features.some_other_feature": "true" } }).name).toBe("codex");
  });

  it("refuses config keys that add MCP servers, whose tools Codex would run itself outside the runtime's pipeline", () => {
    for (const key of ["mcp_servers", "mcp_servers.x.command", "mcp_servers.x.enabled"]) {
      expect(() => codexAgentHarness({ config: { [key]: '"node"' } }), key).toThrow(expect.objectContaining({ code: "AL_ERR_PLUGIN_OPTIONS", message: expect.stringContaining(`config.${key} is not an option: Codex would run MCP servers' tools itself`) }));
    }
  });

  it("refuses a config key that is not a plain dotted name, so a route-owned key cannot slip past with a space or quotes", () => {
    // Codex trims a -c key, so " web_search" would be its web_search, turned back on.
    for (const key of [" web_search", "web_search ", "\tfeatures.shell_tool", 'features."shell_tool"', "features. shell_tool", "tools..web_search", ""]) {
      expect(() => codexAgentHarness({ config: { [key]: '"live"' } }), JSON.stringify(key)).toThrow(
        expect.objectContaining({ code: "AL_ERR_PLUGIN_OPTIONS", message: expect.stringContaining(`config[${JSON.stringify(key)}] is not an option: config keys are plain dotted names`) }),
      );
    }
    expect(() => codexAgentHarness({ config: { " web_search": '"live"' } })).toThrow(/fix: .*: "web_search"\./);
    expect(codexAgentHarness({ config: { "model_providers.my-local_1.stream_max_retries": "3" } }).name).toBe("codex");
  });

  it("accepts every documented option, and none", () => {
    const env = { ...process.env, CODEX_HOME: "/tmp/codex-home", UNSET: undefined };
    expect(codexAgentHarness({ command: "/usr/local/bin/codex", config: { model_reasoning_effort: '"high"' }, env }).name).toBe("codex");
    expect(codexAgentHarness({ command: undefined }).name).toBe("codex");
    expect(codexAgentHarness().name).toBe("codex");
    expect(codexPlugin({ env }).name).toBe("codex");
  });
});
