import { AssemblyLineError, type NewRunEvent, type RunEvent, type RunStateChange } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";

/**
 * In-memory state whose first append holding an event of `type` fails, as if the
 * process died right before that write; every later append goes through.
 */
export class CrashOnceBefore extends InMemoryStateAdapter {
  crashed = false;

  constructor(private readonly type: string) {
    super();
  }

  override async appendEvents(runId: string, events: NewRunEvent[], change?: RunStateChange, options?: Parameters<InMemoryStateAdapter["appendEvents"]>[3]): Promise<RunEvent[]> {
    if (!this.crashed && events.some((event) => event.type === this.type)) {
      this.crashed = true;
      throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", `the state store went away before ${this.type} was recorded`);
    }
    return super.appendEvents(runId, events, change, options);
  }
}
