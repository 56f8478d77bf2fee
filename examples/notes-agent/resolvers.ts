import { defineRunResolver } from "@assemblyline-agents/core";

// Read-only callers may look notes up but never record them. The run's metadata comes from
// the host that starts it (runAgent({ metadata }) when embedding): the /message channel
// takes only message and conversationId, so no HTTP caller can choose it.
export default defineRunResolver(async (ctx) => {
  if (ctx.metadata?.access === "read-only") {
    return {
      instructions: "This caller has read-only access: do not record notes.",
      defaultTools: ["lookup_notes", "ask_question"],
    };
  }
  return null;
});
