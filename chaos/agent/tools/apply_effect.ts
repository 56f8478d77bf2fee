import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineTool } from "@assemblyline-agents/core";

/** One ledger line, appended with O_APPEND so lines of every process interleave whole and in order. */
function ledger(line: string): void {
  appendFileSync(process.env.CHAOS_LEDGER!, `${line}\n`, { flag: "a" });
}

// The side effect the suite counts. It works a random while (so kills and freezes land
// mid-call), records its intent through the runtime (a fenced write: a process that lost
// the run stops here), then applies the effect to an "external system" that, like a
// payment API, applies each idempotency key once (an O_EXCL create per key). Every step
// is written to the ledger outside the state store.
export default defineTool({
  description: "Apply this run's side effect once.",
  inputSchema: { type: "object", properties: {} },
  async execute(_input, ctx) {
    const who = process.env.CHAOS_WHO ?? String(process.pid);
    const key = ctx.idempotencyKey("effect");
    ledger(`attempt ${ctx.runId} ${ctx.toolCallId} ${key} ${who}`);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Number(process.env.CHAOS_TOOL_MS ?? "300")));
    await ctx.emit("effect.applying", { who });
    const keys = join(process.env.CHAOS_LEDGER! + ".keys");
    mkdirSync(keys, { recursive: true });
    try {
      writeFileSync(join(keys, createHash("sha256").update(key).digest("hex")), who, { flag: "wx" });
      ledger(`effect ${ctx.runId} ${ctx.toolCallId} ${key} ${who}`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      ledger(`deduped ${ctx.runId} ${ctx.toolCallId} ${key} ${who}`);
    }
    // Work after the effect (reading back a confirmation): a kill here re-runs a call
    // whose effect is already applied, which only a stable idempotency key makes safe.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Number(process.env.CHAOS_TOOL_MS ?? "300")));
    return { applied: true };
  },
});
