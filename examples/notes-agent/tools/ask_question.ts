import { defineTool } from "@assemblyline-agents/core";
import { builtInToolDefaults } from "@assemblyline-agents/runtime";

const askQuestion = builtInToolDefaults.ask_question;

// Wraps the built-in: same description, schema and behaviour, plus an audit event.
export default defineTool({
  ...askQuestion,
  async execute(input, ctx) {
    await ctx.emit("audit.question_asked", { question: (input as { question: string }).question });
    return askQuestion.execute(input, ctx);
  },
});
