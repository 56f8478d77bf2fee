import { brand, hasBrand, type Branded } from "./brand.js";
import type { RunEvent } from "./events.js";

/** Where telemetry goes. */
export interface TelemetrySink {
  export(event: RunEvent): void | Promise<void>;
  /** Called during graceful shutdown. */
  flush?(): Promise<void>;
}

export type CaptureContent = "usage" | "content" | "full" | "off";

export interface InstrumentationOptions {
  serviceName?: string;
  /** Default "usage": token/cost/model/tool metadata, no message bodies. */
  captureContent?: CaptureContent;
  setup(args: { env: Record<string, string | undefined> }): TelemetrySink | undefined | Promise<TelemetrySink | undefined>;
}

export type InstrumentationDefinition = InstrumentationOptions & Branded<"assembly-line.instrumentation">;

export function defineInstrumentation(options: InstrumentationOptions): InstrumentationDefinition {
  return brand("assembly-line.instrumentation", options);
}

export function isInstrumentationDefinition(value: unknown): value is InstrumentationDefinition {
  return hasBrand(value, "assembly-line.instrumentation");
}
