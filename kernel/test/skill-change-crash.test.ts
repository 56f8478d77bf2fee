import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import type { JsonValue } from "@assemblyline-agents/core";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { startAgent } from "./support/runtime.js";

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learner", model: "test/model", instructions: "Learn.", selfImprovement: { writable: true } });
`;
const SEED = "---\ndescription: Pristine.\n---\nv1\n";
const NO_INPUT = `{ type: "object", properties: {}, additionalProperties: false }`;

/**
 * A run whose one tool call changes the seeded skill "pristine": the first attempt's process
 * dies as the change's event is written (after the skill store took the change), and the run
 * is resumed, as recovery resumes it, re-running the interrupted call.
 */
async function changedAcrossACrash(call: { name: string; input: JsonValue }, state: InMemoryStateAdapter) {
  const dir = agentFolder({
    "agent.ts": AGENT,
    "skills/pristine/SKILL.md": SEED,
    "skills/pristine/notes.md": "notes\n",
    "tools/forget.ts": toolSource({ upFront: true, schema: NO_INPUT, execute: `return await ctx.selfImprovement.delete("pristine");` }),
    "tools/rewrite.ts": toolSource({ upFront: true, schema: NO_INPUT, execute: `return await ctx.selfImprovement.update({ name: "pristine", body: "v2" });` }),
  });
  const { runtime, log, events } = await startAgent(dir, [{ toolCalls: [call] }, { text: "done" }], { state });
  const seeded = async () => (await runtime.skills().get("pristine"))?.digest;
  const first = await runtime.run({ message: "go" }).then(
    () => undefined,
    (error: unknown) => error,
  );
  const [run] = (await state.listRuns()).runs;
  const resumed = await runtime.resume(run!.id);
  const changed = (await events(run!.id)).filter((event) => event.type === "skill.changed").map((event) => event.data);
  return { first, resumed, changed, outcome: log.outcomes.at(-1)?.outcome, runtime, seeded };
}

describe("a skill change whose event a crash kept from being written", () => {
  it("ctx.selfImprovement.delete(): the resumed call reports the delete it made, and its event is recorded once", async () => {
    const state = new CrashOnceBefore("skill.changed");
    const { first, resumed, changed, outcome, runtime } = await changedAcrossACrash({ name: "forget", input: {} }, state);
    expect(first).toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    expect(resumed.status).toBe("completed");
    expect(outcome).toMatchObject({ status: "completed", isError: false, output: { name: "pristine", after: null } });
    expect(changed).toEqual([expect.objectContaining({ name: "pristine", path: "SKILL.md", before: expect.stringMatching(/^sha256:/), after: null })]);
    expect(await runtime.skills().get("pristine")).toBeUndefined();
  });

  it("ctx.selfImprovement.update(): the resumed call reports the digests before and after, and its event is recorded once", async () => {
    const state = new CrashOnceBefore("skill.changed");
    const { resumed, changed, outcome, runtime } = await changedAcrossACrash({ name: "rewrite", input: {} }, state);
    expect(resumed.status).toBe("completed");
    const after = (await runtime.skills().get("pristine"))!.digest;
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({ name: "pristine", after });
    expect(changed[0]!.before).not.toBe(after);
    expect(outcome).toMatchObject({ status: "completed", output: { name: "pristine", before: changed[0]!.before, after } });
  });

  it("the write and delete tools on /skills: the resumed call records the change once", async () => {
    const calls: Array<{ name: string; input: Record<string, string> }> = [
      { name: "write", input: { path: "/skills/pristine/SKILL.md", content: "---\ndescription: Pristine.\n---\nv3\n" } },
      { name: "delete", input: { path: "/skills/pristine/notes.md" } },
    ];
    for (const call of calls) {
      const state = new CrashOnceBefore("skill.changed");
      const { resumed, changed, runtime } = await changedAcrossACrash(call, state);
      expect(resumed.status, call.name).toBe("completed");
      const after = (await runtime.skills().get("pristine"))!;
      expect(changed, call.name).toEqual([expect.objectContaining({ name: "pristine", path: call.input.path!.split("/").at(-1), after: after.digest })]);
      expect(changed[0]!.before, call.name).not.toBe(after.digest);
      if (call.name === "delete") expect(after.files["notes.md"]).toBeUndefined();
    }
  });

  it("the edit tool on /skills: the resumed call, finding its edit already made, records the change once", async () => {
    const state = new CrashOnceBefore("skill.changed");
    const edit = { name: "edit", input: { path: "/skills/pristine/SKILL.md", oldText: "v1", newText: "v2" } };
    const { first, resumed, changed, outcome, runtime } = await changedAcrossACrash(edit, state);
    expect(first).toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    expect(resumed.status).toBe("completed");
    const after = (await runtime.skills().get("pristine"))!;
    expect(after.body).toBe("v2\n");
    expect(outcome).toMatchObject({ status: "completed", isError: false, output: { replaced: 1 } });
    expect(changed).toEqual([expect.objectContaining({ name: "pristine", path: "SKILL.md", after: after.digest })]);
    expect(changed[0]!.before).not.toBe(after.digest);
  });

  it("without a crash, each change is recorded once", async () => {
    const state = new InMemoryStateAdapter();
    const { first, changed } = await changedAcrossACrash({ name: "forget", input: {} }, state);
    expect(first).toBeUndefined();
    expect(changed).toHaveLength(1);
  });
});
