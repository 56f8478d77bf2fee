import { expect } from "vitest";

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * A refusal by core's input checks (state/input-checks.ts), matched on its whole first line: every
 * store that calls them refuses the same input with the same words, so a caller meets one message
 * whichever store it runs on.
 */
export function stateInputRefusal(summary: string) {
  return { code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringMatching(new RegExp(`^AL_ERR_STATE_INPUT_INVALID: ${escapeRegExp(summary)}(\n|$)`)) };
}
