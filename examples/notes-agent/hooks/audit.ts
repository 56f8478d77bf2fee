import { defineHook } from "@assemblyline-agents/core";

export default defineHook({
  events: {
    "note.recorded"(event, ctx) {
      if (process.env.NOTES_AGENT_AUDIT) console.error(`[${ctx.agent.name}] note recorded in ${ctx.runId}: ${String(event.data.note)}`);
    },
    "run.completed"(event, ctx) {
      if (process.env.NOTES_AGENT_AUDIT) console.error(`[${ctx.agent.name}] run ${ctx.runId} completed at seq ${event.seq}`);
    },
  },
});
