import { appendFileSync } from "node:fs";
import { defineHook } from "@assemblyline-agents/core";

// Each completion the runtime durably records, written to the ledger outside the state
// store: a second completion of one run (a stale owner writing after another finished it)
// shows here as a second line.
export default defineHook({
  events: {
    "run.completed"(event, ctx) {
      appendFileSync(process.env.CHAOS_LEDGER!, `completed ${ctx.runId} seq=${event.seq} ${process.env.CHAOS_WHO ?? process.pid}\n`, { flag: "a" });
    },
  },
});
