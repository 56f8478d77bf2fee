import { parseJsonWithRepair, type AssistantMessage } from "@mariozechner/pi-ai";

/** How much of a refused call's argument text the model is shown. */
const QUOTED_ARGUMENT_CHARS = 200;

/** A model reply, with the tool calls that must not run and what the model is told about each. */
export interface ScreenedReply {
  message: AssistantMessage;
  /** Tool call id -> the error the model gets as that call's result. */
  refusedToolCalls: Record<string, string>;
}

/**
 * Refuse tool calls whose arguments are not what the model finished writing.
 * pi-ai's streaming parser "completes" a cut-off `{"path": "/build/ca` into
 * `{"path": "/build/ca"}` and turns text that is not JSON into `{}`, so the
 * arguments it hands back cannot be trusted on their own: the raw argument
 * text (`rawArguments`, by content index) is checked instead. A call is refused
 * when the reply stopped at the output limit (its calls may be cut short or
 * incomplete as a set) or its text is not a JSON object. A refused call keeps
 * its place in the transcript with empty arguments (providers need an object
 * there; an empty one claims nothing the model did not send) and its result
 * quotes what the model did send, so it can make the call again.
 */
export function screenToolCalls(message: AssistantMessage, rawArguments: ReadonlyMap<number, string>): ScreenedReply {
  const refusedToolCalls: Record<string, string> = {};
  const cutOff = message.stopReason === "length";
  const lastCall = message.content.findLastIndex((block) => block.type === "toolCall");
  const content = message.content.map((block, index) => {
    if (block.type !== "toolCall") return block;
    const raw = rawArguments.get(index);
    let refusal: string | undefined;
    if (cutOff) {
      refusal =
        index === lastCall
          ? `Not run: the arguments of this ${block.name} call were cut off by the output token limit before they were complete. Make the call again with complete arguments (shorter ones, or split the work across several calls).${quoted(raw)}`
          : `Not run: the reply this ${block.name} call was part of was cut off by the output token limit, so its calls may not be the whole of what was meant. Make the call again if it is still needed.`;
    } else if (raw !== undefined) {
      const problem = argumentProblem(raw);
      if (problem) refusal = `Not run: the arguments of this ${block.name} call are ${problem}. Make the call again with its arguments as one JSON object.${quoted(raw)}`;
    }
    if (refusal === undefined) return block;
    refusedToolCalls[block.id] = refusal;
    return { ...block, arguments: {} };
  });
  return { message: { ...message, content }, refusedToolCalls };
}

/*
 * Strict JSON, with pi-ai's repair of raw control characters and stray
 * backslashes inside strings (a common model slip whose meaning is not in
 * doubt). Empty text is a call without arguments (Anthropic streams none for one).
 */
function argumentProblem(raw: string): string | undefined {
  if (raw.trim() === "") return undefined;
  let value: unknown;
  try {
    value = parseJsonWithRepair<unknown>(raw);
  } catch {
    return "not valid JSON";
  }
  return value !== null && typeof value === "object" && !Array.isArray(value) ? undefined : "JSON but not an object";
}

/** The argument text as received, last, so nothing after it can be mistaken for part of it. */
function quoted(raw: string | undefined): string {
  if (raw === undefined || raw === "") return " No argument text was received.";
  if (raw.length <= QUOTED_ARGUMENT_CHARS) return ` The argument text received (${raw.length} characters):\n${raw}`;
  return ` The first ${QUOTED_ARGUMENT_CHARS} of the ${raw.length} characters of argument text received:\n${raw.slice(0, QUOTED_ARGUMENT_CHARS)}`;
}
