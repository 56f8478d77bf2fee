import { defaultContext, defineAgent } from "@assemblyline-agents/core";

export default defineAgent({
  id: "notes-agent",
  name: "Notes",
  description: "Keeps durable notes for the user.",
  model: "openai/gpt-5.4-mini",
  instructions:
    "You keep notes for the user. Record a note with record_note when asked to remember something, " +
    "and use lookup_notes to find earlier notes before answering questions about them. Be brief.",
  // Offered up front; the file tools (and bash, with a sandbox) stay behind tool_search.
  defaultTools: ["record_note", "lookup_notes", "ask_question"],
  context: defaultContext({ recentHistory: { maxMessages: 12 } }),
});
