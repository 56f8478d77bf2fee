import type { AdapterDescriptor, ConversationStore, PluginDefinition, RunStore, UsageStore } from "@assemblyline-agents/core";

export declare const JSONFILE_PLUGIN_ID: "jsonfile";

export interface JsonFileStateOptions {
  /** The state file. Default: $JSONFILE_STATE_FILE, else <agentDir>/.assembly-line/state.json. */
  file?: string;
}

/** `state: jsonFileState()` in gateway.ts. */
export declare function jsonFileState(options?: JsonFileStateOptions): AdapterDescriptor<"state", JsonFileStateOptions>;

export declare const plugin: PluginDefinition;

/** Runs, conversations and usage in one JSON file; one process per file. */
export declare class JsonFileState implements RunStore, ConversationStore, UsageStore {
  constructor(options: { file: string });
  static open(options: { file: string }): Promise<JsonFileState>;
  readonly file: string;
  close(): Promise<void>;
  createRun: RunStore["createRun"];
  getRun: RunStore["getRun"];
  listRuns: RunStore["listRuns"];
  appendEvents: RunStore["appendEvents"];
  listEvents: RunStore["listEvents"];
  markObserved: RunStore["markObserved"];
  getToolCall: RunStore["getToolCall"];
  listToolCalls: RunStore["listToolCalls"];
  getStep: RunStore["getStep"];
  getCheckpoint: RunStore["getCheckpoint"];
  acquireRunLease: RunStore["acquireRunLease"];
  renewRunLease: RunStore["renewRunLease"];
  releaseRunLease: RunStore["releaseRunLease"];
  claimRecoverableRuns: RunStore["claimRecoverableRuns"];
  listDeliveries: RunStore["listDeliveries"];
  claimDeliveries: RunStore["claimDeliveries"];
  completeDelivery: RunStore["completeDelivery"];
  failDelivery: RunStore["failDelivery"];
  appendConversationMessages: ConversationStore["appendConversationMessages"];
  listConversationMessages: ConversationStore["listConversationMessages"];
  recordUsage: UsageStore["recordUsage"];
  listUsage: UsageStore["listUsage"];
}
