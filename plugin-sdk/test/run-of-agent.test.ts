import { describe, expect, it } from "vitest";
import { isRunOfAgent } from "@assemblyline-agents/core";

describe("isRunOfAgent", () => {
  it("takes the agent's own runs and its subagents' runs at any depth", () => {
    expect(isRunOfAgent({ agentId: "support" }, "support")).toBe(true);
    expect(isRunOfAgent({ agentId: "support/researcher" }, "support")).toBe(true);
    expect(isRunOfAgent({ agentId: "support/researcher/fact_checker" }, "support")).toBe(true);
  });

  it("refuses another agent's runs, including one whose id merely starts with the agent's", () => {
    expect(isRunOfAgent({ agentId: "billing" }, "support")).toBe(false);
    expect(isRunOfAgent({ agentId: "support-eu" }, "support")).toBe(false);
    expect(isRunOfAgent({ agentId: "support-eu/researcher" }, "support")).toBe(false);
    // A subagent's runtime does not own its parent's runs.
    expect(isRunOfAgent({ agentId: "support" }, "support/researcher")).toBe(false);
    expect(isRunOfAgent({ agentId: "" }, "support")).toBe(false);
  });
});
