import { defineAgent } from "@assemblyline-agents/core";

export default defineAgent({
  id: "gateway-agent",
  name: "Greeter",
  description: "Greets people; its runs live in a JSON file kept by a third-party state plugin (see gateway.ts).",
  model: "openai/gpt-5.4-mini",
  instructions: "Greet the user by name. Use the greet tool to record the greeting, then reply in one sentence.",
  // An authored tool is offered up front only when listed; the file tools stay behind tool_search.
  defaultTools: ["greet"],
});
