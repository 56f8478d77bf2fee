import { CONTRACT_METHODS, SLOT_CONTRACTS, STATE_FACET_METHODS, type GatewaySlot, type StateFacetName } from "@assemblyline-agents/core";

/** One interface the scaffolded adapter class implements, with the methods to stub. */
export interface ScaffoldInterface {
  /** The @assemblyline-agents/core type, e.g. "BlobStore". */
  type: string;
  methods: readonly string[];
}

/** What `plugins new --slot <slot>` generates for one slot. */
export interface SlotTemplate {
  slot: GatewaySlot;
  contract: string;
  /** Suffix of the adapter class and helper, e.g. "BlobStore" -> AcmeBlobStore. */
  classSuffix: string;
  /** File name of the adapter under src/, without extension. */
  file: string;
  interfaces(facets: readonly StateFacetName[]): ScaffoldInterface[];
  /** Contracts whose objects carry a readonly `name`. */
  named: boolean;
  /** The @assemblyline-agents/core/testkit kit the skeleton's test runs, when the contract has one. */
  kit?: { name: string; extraArgs(facets: readonly StateFacetName[]): string };
  /** The kit's subject is { scheduler, schedules }: the skeleton's test gives it an in-memory schedule store. */
  subjectNeedsSchedules?: boolean;
}

/** Facet -> the core interface that declares its methods. */
const FACET_TYPES: Record<StateFacetName, string> = {
  runs: "RunStore",
  conversations: "ConversationStore",
  schedules: "ScheduleStateStore",
  files: "FileIndexStore",
  usage: "UsageStore",
  sandboxSessions: "SandboxSessionStore",
  memory: "MemoryStateStore",
  settings: "RuntimeSettingsStore",
  skills: "SkillStore",
};

const single = (type: string, contract: keyof typeof CONTRACT_METHODS) => () => [{ type, methods: CONTRACT_METHODS[contract] }];

/**
 * The slots a third-party plugin can scaffold. A slot added to the kernel
 * (and its kit to core/testkit) gets one entry here.
 */
export const SLOT_TEMPLATES: Partial<Record<GatewaySlot, SlotTemplate>> = {
  state: {
    slot: "state",
    contract: SLOT_CONTRACTS.state,
    classSuffix: "State",
    file: "state",
    named: false,
    interfaces: (facets) => facets.map((facet) => ({ type: FACET_TYPES[facet], methods: STATE_FACET_METHODS[facet] })),
    kit: { name: "describeStateConformance", extraArgs: (facets) => `, { facets: ${JSON.stringify(facets)} }` },
  },
  blob: {
    slot: "blob",
    contract: SLOT_CONTRACTS.blob,
    classSuffix: "BlobStore",
    file: "blob-store",
    named: false,
    interfaces: single("BlobStore", "blob@1"),
    kit: { name: "describeBlobStoreConformance", extraArgs: () => "" },
  },
  sandbox: {
    slot: "sandbox",
    contract: SLOT_CONTRACTS.sandbox,
    classSuffix: "Sandbox",
    file: "sandbox-adapter",
    named: true,
    interfaces: single("SandboxAdapter", "sandbox@1"),
    kit: { name: "describeSandboxConformance", extraArgs: () => "" },
  },
  scheduler: {
    slot: "scheduler",
    contract: SLOT_CONTRACTS.scheduler,
    classSuffix: "Scheduler",
    file: "scheduler",
    named: false,
    interfaces: single("Scheduler", "scheduler@1"),
    kit: { name: "describeSchedulerConformance", extraArgs: () => "" },
    subjectNeedsSchedules: true,
  },
  deploy: {
    slot: "deploy",
    contract: SLOT_CONTRACTS.deploy,
    classSuffix: "DeployTarget",
    file: "deploy-target",
    named: true,
    interfaces: single("DeployTarget", "deploy@1"),
    kit: { name: "describeDeployConformance", extraArgs: () => "" },
  },
};

export const SCAFFOLD_SLOTS = Object.keys(SLOT_TEMPLATES) as GatewaySlot[];
