import { describe, expect, it } from "vitest";
import type { JsonValue } from "@assemblyline-agents/core";
import { sharedPostgres } from "./support/shared-postgres.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { outputOf } from "./support/probe-harness.js";
import { startAgent } from "./support/runtime.js";

const postgres = await sharedPostgres("automation-manager-replicas");

const AGENT = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", dynamicAutomations: { dynamic: true, approval: false } });
`;

/** Makes each change it is given in turn; a refusal is answered, not thrown, so every change is tried. */
const manage = toolSource({
  upFront: true,
  schema: `{ type: "object", properties: { changes: { type: "array" } }, required: ["changes"] }`,
  execute: `const m = ctx.automationManager;
    const answers = [];
    for (const [action, name, message] of input.changes) {
      try {
        if (action === "create") answers.push(await m.create({ name, schedule: "0 9 * * *", message }));
        else if (action === "update") answers.push(await m.update(name, { message }));
        else answers.push(await m.delete(name));
      } catch (error) {
        answers.push({ error: error.code, message: error.message });
      }
    }
    return answers;`,
});

/** Two hosts of one agent, each a runtime with its own connections to one PostgreSQL schema. */
async function twoHosts(changesA: JsonValue[], changesB: JsonValue[]) {
  const schema = postgres.schema("al_automation_manager");
  const dir = agentFolder({ "agent.ts": AGENT, "tools/manage.ts": manage });
  const host = async (changes: JsonValue[]) => {
    const state = await postgres.state(schema);
    const started = await startAgent(dir, [{ toolCalls: [{ name: "manage", input: { changes } }] }, { text: "done" }], { state });
    postgres.closeLater(() => started.runtime.close());
    return started;
  };
  const a = await host(changesA);
  const b = await host(changesB);
  return { a, b, runtime: a.runtime };
}

describe.skipIf(!postgres.available)("ctx.automationManager on two hosts sharing PostgreSQL", () => {
  it("loses none of the creates, updates and deletes two hosts make at once", async () => {
    const changesA = [...["a1", "a2", "a3", "a4"].map((name) => ["create", name, `from a`]), ["update", "x1", "a was here"], ["update", "x2", "a was here"], ["delete", "x3"]];
    const changesB = [...["b1", "b2", "b3", "b4"].map((name) => ["create", name, `from b`]), ["update", "x4", "b was here"], ["delete", "x5"]];
    const { a, b, runtime } = await twoHosts(changesA, changesB);
    for (const name of ["x1", "x2", "x3", "x4", "x5"]) await runtime.automations.create({ name, schedule: "0 9 * * *", message: "before" });

    const [runA, runB] = await Promise.all([a.runtime.run({ message: "go" }), b.runtime.run({ message: "go" })]);
    expect([runA.status, runB.status]).toEqual(["completed", "completed"]);
    const answers = [...(outputOf(a.log.outcomes.at(-1)!.outcome) as JsonValue[]), ...(outputOf(b.log.outcomes.at(-1)!.outcome) as JsonValue[])];
    expect(answers.filter((answer) => (answer as { error?: string }).error !== undefined)).toEqual([]);

    const stored = Object.fromEntries((await b.runtime.automations.list()).map((automation) => [automation.name, automation.message]));
    expect(stored).toEqual({ a1: "from a", a2: "from a", a3: "from a", a4: "from a", b1: "from b", b2: "from b", b3: "from b", b4: "from b", x1: "a was here", x2: "a was here", x4: "b was here" });
  });

  it("creates a name both hosts create at once only once: one host's create stands, the other is refused", async () => {
    const { a, b } = await twoHosts([["create", "shared", "from a"]], [["create", "shared", "from b"]]);
    await Promise.all([a.runtime.run({ message: "go" }), b.runtime.run({ message: "go" })]);
    const [answerA] = outputOf(a.log.outcomes.at(-1)!.outcome) as Array<{ message?: string; error?: string }>;
    const [answerB] = outputOf(b.log.outcomes.at(-1)!.outcome) as Array<{ message?: string; error?: string }>;
    const stored = await a.runtime.automations.list();
    expect(stored).toHaveLength(1);
    const [won, lost] = stored[0]!.message === "from a" ? [answerA, answerB] : [answerB, answerA];
    expect(won).toEqual(stored[0]);
    expect(lost).toMatchObject({ error: "AL_ERR_AUTOMATION_INPUT", message: expect.stringContaining('an automation named "shared" already exists') });
  });
});
