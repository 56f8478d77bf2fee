import {
  AssemblyLineError,
  CAPTURE_CONTENT_MODES,
  isInstrumentationDefinition,
  isTelemetrySink,
  type CaptureContent,
  type TelemetrySink,
} from "@assemblyline-agents/core";
import { KNOWN_KEYS, refuseUnknownKeys } from "../compiler/known-keys.js";

/** instrumentation.ts after its setup ran: what the runtime's tracer uses. */
export interface ActiveInstrumentation {
  serviceName?: string;
  captureContent: CaptureContent;
  /** Absent when setup returned undefined (e.g. no endpoint configured here). */
  sink?: TelemetrySink;
}

/** Check what instrumentation.ts exports; the compiler and the loader share it. */
export function checkInstrumentation(value: unknown, file: string): asserts value is import("@assemblyline-agents/core").InstrumentationDefinition {
  const fix = 'Write `export default defineInstrumentation({ captureContent: "usage", setup: ({ env }) => createOtlpSinkFromEnv(env) })`.';
  if (!isInstrumentationDefinition(value)) {
    throw new AssemblyLineError("AL_ERR_INSTRUMENTATION_DEFINITION", `${file} does not default-export defineInstrumentation(...)`, { fix });
  }
  // A misspelt captureContent would otherwise export at the default level ("usage") what its author turned off.
  refuseUnknownKeys(value, KNOWN_KEYS.instrumentation, `${file}: defineInstrumentation`, "AL_ERR_INSTRUMENTATION_DEFINITION");
  if (typeof value.setup !== "function") throw new AssemblyLineError("AL_ERR_INSTRUMENTATION_DEFINITION", `${file}: setup is not a function`, { fix });
  if (value.captureContent !== undefined && !(CAPTURE_CONTENT_MODES as readonly string[]).includes(value.captureContent)) {
    throw new AssemblyLineError("AL_ERR_INSTRUMENTATION_DEFINITION", `${file}: captureContent ${JSON.stringify(value.captureContent)} is not one of ${CAPTURE_CONTENT_MODES.join(", ")}`, { fix });
  }
  if (value.serviceName !== undefined && (typeof value.serviceName !== "string" || value.serviceName.trim() === "")) {
    throw new AssemblyLineError("AL_ERR_INSTRUMENTATION_DEFINITION", `${file}: serviceName must be a non-empty string`, { fix });
  }
}

/** Run instrumentation.ts's setup once, at startup; a failure stops the boot. */
export async function startInstrumentation(value: unknown, file: string, env: Record<string, string | undefined>): Promise<ActiveInstrumentation> {
  checkInstrumentation(value, file);
  const captureContent = value.captureContent ?? "usage";
  let sink: unknown;
  try {
    sink = await value.setup({ env });
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_INSTRUMENTATION_SETUP", `${file}: setup() threw at startup: ${error instanceof Error ? error.message : String(error)}`, {
      fix: "Fix what setup() needs (often an environment variable), or return undefined to run without a sink.",
      cause: error,
    });
  }
  if (sink !== undefined && sink !== null && !isTelemetrySink(sink)) {
    throw new AssemblyLineError("AL_ERR_INSTRUMENTATION_SETUP", `${file}: setup() returned something that is not a TelemetrySink`, {
      fix: "Return an object with export(span) (e.g. createOtlpSinkFromEnv(env)), or undefined.",
    });
  }
  const serviceName = value.serviceName ?? serviceNameFromEnv(env);
  return { ...(serviceName ? { serviceName } : {}), captureContent, ...(sink ? { sink: sink as TelemetrySink } : {}) };
}

/**
 * The service name the OpenTelemetry variables give, for an instrumentation.ts
 * that names none (else the agent id is used): OTEL_SERVICE_NAME, else
 * `service.name` in OTEL_RESOURCE_ATTRIBUTES, as every OpenTelemetry SDK reads them.
 */
function serviceNameFromEnv(env: Record<string, string | undefined>): string | undefined {
  const named = env.OTEL_SERVICE_NAME?.trim();
  if (named) return named;
  for (const pair of (env.OTEL_RESOURCE_ATTRIBUTES ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at < 0 || pair.slice(0, at).trim() !== "service.name") continue;
    try {
      return decodeURIComponent(pair.slice(at + 1).trim()) || undefined;
    } catch {
      // Malformed: the sink that reads the variable says so; the agent id stays.
      return undefined;
    }
  }
  return undefined;
}
