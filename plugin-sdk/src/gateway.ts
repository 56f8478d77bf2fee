import { brand, hasBrand, type Branded } from "./brand.js";

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
  return brand("assembly-line.gateway", options);
}

export function isGatewayDefinition(value: unknown): value is GatewayDefinition {
  return hasBrand(value, "assembly-line.gateway");
}
