import { defineTool } from "@assemblyline-agents/core";

export default defineTool({
  description: "Record that a person was greeted; returns the greeting to use.",
  inputSchema: {
    type: "object",
    properties: { name: { type: "string", minLength: 1 } },
    required: ["name"],
    additionalProperties: false,
  },
  async execute(input: { name: string }) {
    return { greeting: `Hello, ${input.name}!` };
  },
});
