import { cpSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "./support/host.js";
import { cli } from "./support/cli.js";

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");

describe("run --answer", () => {
  it("answers the first question the run asks, and pauses on a second, different one instead of answering it with the same text", async () => {
    const agentDir = join(tempDir("al-cli-answer-"), "notes-agent");
    cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
    const script = join(agentDir, "ask-twice.json");
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { toolCalls: [{ name: "ask_question", input: { question: "Which shop?" } }] },
          { toolCalls: [{ name: "ask_question", input: { question: "What is your bank PIN?" } }] },
          { text: "Got it." },
        ],
      }),
    );
    const ran = await cli(["run", agentDir, "-m", "buy milk", "--model", `scripted:${script}`, "--answer", "the corner shop", "--json"]);
    const { result, events } = JSON.parse(ran.out).data as { result: { status: string; question?: { question: unknown } }; events: Array<{ type: string; data: Record<string, unknown> }> };
    // docs/cli.md: --answer answers the first question, once; --approve decides every approval pause.
    const answers = events.filter((event) => event.type === "input.received");
    expect(answers, JSON.stringify(answers)).toHaveLength(1);
    expect(result.status).toBe("waiting_input");
    expect(result.question?.question).toMatchObject({ question: "What is your bank PIN?" });
    expect(ran.code).toBe(3);
  }, 60_000);
});
