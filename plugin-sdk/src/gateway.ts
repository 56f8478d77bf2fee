import { brand, hasBrand, type Branded } from "./brand.js";
import { AssemblyLineError } from "./errors.js";

export const GATEWAY_SLOTS = ["deploy", "runtime", "state", "blob", "sandbox", "scheduler"] as const;
export type GatewaySlot = (typeof GATEWAY_SLOTS)[number];

/**
 * What a `gateway.ts` helper returns: which plugin fills which slot, with what
 * options. The kernel materializes it through `hooks.slot`.
 */
export interface AdapterDescriptor<Slot extends GatewaySlot = GatewaySlot, Options = unknown>
  extends Branded<"assembly-line.adapter"> {
  /** The slot this adapter fills; undefined for `adapter("name")`, resolved by slot key. */
  readonly slot: Slot | undefined;
  /** The plugin id that provides it (`postgres`, `local`, ...). */
  readonly plugin: string;
  readonly options: Options;
}

export function adapterDescriptor<Slot extends GatewaySlot, Options>(
  slot: Slot,
  plugin: string,
  options: Options,
): AdapterDescriptor<Slot, Options> {
  return brand("assembly-line.adapter", { slot, plugin, options });
}

/** Resolve a slot by adapter name among the installed plugins (`adapter("node")`). */
export function adapter(name: string, options: Record<string, unknown> = {}): AdapterDescriptor<GatewaySlot, Record<string, unknown>> {
  if (typeof name !== "string" || name === "") throw new TypeError('adapter(name): name must be a plugin adapter name such as "local"');
  return brand("assembly-line.adapter", { slot: undefined, plugin: name, options });
}

export function isAdapterDescriptor(value: unknown): value is AdapterDescriptor {
  return hasBrand(value, "assembly-line.adapter");
}

export type GatewayOptions = Partial<Record<GatewaySlot, AdapterDescriptor>>;
export type GatewayDefinition = GatewayOptions & Branded<"assembly-line.gateway">;

/** Choose portable runtime infrastructure, one independent adapter per slot. */
export function defineGateway(options: GatewayOptions): GatewayDefinition {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", "defineGateway(options): options must be an object of slots", { fix: `Pass { ${GATEWAY_SLOTS.join(", ")} }, each an adapter descriptor.` });
  }
  // A key no slot reads would leave that part on its default without a word (blobs: for blob:).
  const unknown = Object.keys(options).filter((key) => !(GATEWAY_SLOTS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    const hints = unknown.map((key) => GATEWAY_KEY_HINTS[key]).filter(Boolean);
    throw new AssemblyLineError("AL_ERR_GATEWAY_DEFINITION", `defineGateway: ${unknown.map((key) => JSON.stringify(key)).join(", ")} ${unknown.length === 1 ? "is not a slot" : "are not slots"}`, {
      fix: `The slots are ${GATEWAY_SLOTS.join(", ")}.${hints.length > 0 ? ` ${hints.join(" ")}` : ""}`,
    });
  }
  return brand("assembly-line.gateway", options);
}

/** What a key often written in gateway.ts means instead. */
const GATEWAY_KEY_HINTS: Record<string, string> = {
  blobs: "Blob storage is the blob slot.",
  telemetry: "Telemetry is set up in instrumentation.ts (defineInstrumentation), not in gateway.ts.",
  channels: "Channels are files under channels/, not a gateway slot.",
  schedule: "The scheduler slot is scheduler.",
};

export function isGatewayDefinition(value: unknown): value is GatewayDefinition {
  return hasBrand(value, "assembly-line.gateway");
}
