import { defineTool } from "@assemblyline-agents/core";

export const askQuestionTool = defineTool<{ question: string; choices?: string[] }, never>({
  description:
    "Ask the user a question and wait for the answer. Use it when you cannot proceed without information only the user has. The run pauses until the user answers; the answer is this tool's result.",
  inputSchema: {
    type: "object",
    properties: {
      question: { type: "string", minLength: 1, description: "The question, complete and self-contained." },
      choices: { type: "array", items: { type: "string" }, description: "Optional suggested answers." },
    },
    required: ["question"],
    additionalProperties: false,
  },
  sideEffect: "none",
  // Visibility left to the rule, as every built-in's: offered up front unless agent.ts defaultTools leaves it out.
  capability: { execution: "direct" },
  async execute(input, ctx) {
    return ctx.askQuestion(input.question, input.choices ? { choices: input.choices } : undefined);
  },
});
