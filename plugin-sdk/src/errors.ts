/**
 * The error catalogue. Every error Assembly Line raises on purpose carries one of
 * these codes; `docs/errors.md` documents each one and a test keeps the two in step.
 */
export const errorCatalogue = {
  AL_ERR_TOOL_NAME: "A tools/ filename stem is not snake_case.",
  AL_ERR_TOOL_DEFINITION: "A tools/ file does not default-export defineTool(...) or disableTool().",
  AL_ERR_TOOL_SCHEMA: "A tool's inputSchema or outputSchema does not compile as JSON Schema.",
  AL_ERR_DISABLE_UNKNOWN_BUILTIN: "disableTool() in a tools/ file whose name matches no built-in tool.",
  AL_ERR_AGENT_DEFINITION: "agent.ts is missing or does not default-export defineAgent(...).",
  AL_ERR_AGENT_HARNESS_KEY: "agent.ts declares a harness: key; the engine is chosen by the host.",
  AL_ERR_HOOK_DEFINITION: "A hooks/ file does not default-export defineHook(...).",
  AL_ERR_RESOLVER_DEFINITION: "resolvers.ts does not default-export defineRunResolver(...).",
  AL_ERR_CONTEXT_DEFINITION: "context.ts or agent.ts context is not a defineContext/defaultContext policy.",
  AL_ERR_SOURCE_LOAD: "A source file of the agent folder threw while loading.",
  AL_ERR_MANIFEST_MISSING: "No built manifest was found; run `assembly-line build` first.",
  AL_ERR_MANIFEST_STALE: "A source file changed after the manifest was built.",
  AL_ERR_MANIFEST_VERSION: "The manifest was written by an incompatible compiler.",
  AL_ERR_STATE_RUNS_REQUIRED: "RuntimeOptions.state has no runs facet.",
  AL_ERR_RUN_CAPACITY: "The runtime is at maxConcurrentRuns and its queue is full.",
  AL_ERR_RUN_NOT_FOUND: "No run with that id exists in the state store.",
  AL_ERR_RUN_NOT_RESUMABLE: "The run is not waiting for the decision or answer that was given.",
  AL_ERR_APPROVAL_NOT_FOUND: "No pending approval matches the given id.",
  AL_ERR_CONTINUATION_VERSION: "A paused run's continuation was made by an incompatible engine or revision.",
  AL_ERR_HARNESS: "No engine can serve the run's model spec.",
  AL_ERR_RESOLVER_FAILED: "resolvers.ts threw, which fails the run.",
  AL_ERR_TOOL_OUTPUT: "A tool returned a value that is not JSON-serializable or breaks its outputSchema.",
  AL_ERR_STEP_RESULT: "A ctx.step body returned a value that is not JSON-serializable.",
  AL_ERR_SCRIPTED_MODEL: "The scripted model file is missing, malformed or exhausted.",
  AL_ERR_HOOK_TAP: "A kernel hook tap threw; the error names the hook and the plugin.",
  AL_ERR_EVENT_SEQ: "A state store was asked to append an event out of sequence.",
  AL_ERR_CLI_USAGE: "The command line is missing an argument or has an unknown option.",
  AL_ERR_TOOL_FAILED: "An authored tool threw; the tool call and its run failed.",
  AL_ERR_SANDBOX_UNAVAILABLE: "A tool asked for the sandbox but the host configured no sandbox adapter.",
  AL_ERR_MEMORY_NOT_FOUND: "ctx.memory.read found nothing at that path.",
  AL_ERR_PATH_ESCAPE: "A path leaves its root (.., a symlink, or an absolute host path).",
  AL_ERR_PLUGIN_TIMEOUT: "A plugin's apply or adapter factory did not settle in time.",
  AL_ERR_PLUGIN_APPLY: "A plugin's apply(kernel) threw.",
  AL_ERR_PLUGIN_CONTRACT: "A plugin's live adapter lacks methods of the contract it provides.",
  AL_ERR_GATEWAY_SLOT: "No installed plugin materializes the adapter a gateway.ts slot names.",
  AL_ERR_GATEWAY_DEFINITION: "gateway.ts does not default-export defineGateway(...) with adapter descriptors.",
  AL_ERR_PATH_READ_ONLY: "A write, edit or delete targeted a read-only root (/history, /files, /skills).",
  AL_ERR_PATH_NOT_FOUND: "A runtime filesystem path names nothing.",
  AL_ERR_CHANNEL_DEFINITION: "A channels/ file does not default-export a valid defineChannel(...) or provider helper.",
  AL_ERR_RUN_LEASE_LOST: "Another replica took over a run's lease while this process was executing it.",
  AL_ERR_TOOL_CALL_ID_REUSED: "An engine reused a tool call id of the run for a different call.",
  AL_ERR_KERNEL_HOST_MISSING: "Plugin loading was asked for before the host installed its kernel with useKernelHost().",
  AL_ERR_EVENT_TYPE_RESERVED: "ctx.emit was given an empty event type or one the runtime records itself.",
  AL_ERR_MODEL_UNKNOWN: "A model spec names no model in the pi-ai catalog nor in piAgentHarness({ models }).",
  AL_ERR_MODEL_API_KEY: "No API key for the model's provider: neither piAgentHarness({ apiKeys }) nor its environment variable.",
  AL_ERR_MODEL_PROVIDER: "The model provider refused the request, or kept failing after the bounded retries.",
  AL_ERR_STATE_CONFIG: "A state adapter has no usable connection settings (e.g. DATABASE_URL is unset or malformed).",
  AL_ERR_STATE_SCHEMA_NEWER: "The state database was migrated by a newer adapter version than the one booting.",
  AL_ERR_STATE_MIGRATION: "Applying the state schema migrations failed, or an applied migration differs from the code's.",
  AL_ERR_STATE_ROW_INVALID: "A state store row holds a value the contract does not allow (e.g. edited by hand).",
  AL_ERR_STATE_INPUT_INVALID: "A state store method was called with a value the contract does not allow.",
  AL_ERR_STATE_UNAVAILABLE: "The state database could not be reached, or dropped the connection mid-operation.",
  AL_ERR_STATE_QUERY: "The state database rejected a statement.",
  AL_ERR_STATE_LOCKED: "Another live process holds the local state folder's lock, or the adapter holding it was closed.",
  AL_ERR_SANDBOX_DEFINITION: "sandbox.ts or a sandbox adapter's options are invalid (e.g. a workingDirectory other than /workspace).",
  AL_ERR_PLUGIN_MANIFEST: "A plugin package's package.json has no assemblyLine block, or the block breaks plugin-schema.json (including an unbounded kernel range).",
  AL_ERR_PLUGIN_KERNEL_MISMATCH: "A plugin's assemblyLine.kernel range does not include the running kernel's version.",
  AL_ERR_PLUGIN_IMPORT: "A plugin package's main module is missing or threw while importing.",
  AL_ERR_PLUGIN_EXPORT: "A plugin package lacks its `plugin` export or an export its manifest names, or one of them returns the wrong thing.",
  AL_ERR_PLUGIN_CONFIG_SCHEMA: "A plugin's configSchema file is missing, not JSON, or not a JSON Schema ajv compiles.",
  AL_ERR_PLUGIN_OPTIONS: "The options a gateway.ts helper passes to a plugin's adapter break the plugin's configSchema.",
  AL_ERR_PLUGIN_NOT_FOUND: "No installed package declares the plugin id a gateway.ts slot or a `plugins` command names.",
  AL_ERR_PLUGIN_DUPLICATE_ID: "Two different installed packages declare the same plugin id.",
  AL_ERR_PLUGIN_INSTALL: "npm could not install a plugin package for `assembly-line plugins add`.",
  AL_ERR_GATEWAY_ENV: "A production boot is missing environment variables that the gateway's plugins declare required.",
  AL_ERR_REGISTRY_INVALID: "registry/index.json or registry/generated.json breaks its schema, or names a package that is missing or disagrees with it.",
  AL_ERR_HOST_CONFIG: "A listenNodeRuntime option or its environment variable has an invalid value.",
  AL_ERR_HOST_AUTH_REQUIRED: "A production request reached a route that needs host auth, and the host configured none.",
  AL_ERR_HOST_DRAINING: "The host is shutting down and accepts no new work.",
  AL_ERR_HOST_INTERNAL: "An HTTP endpoint failed unexpectedly; the host logged the cause.",
  AL_ERR_HTTP_UNAUTHORIZED: "A request to an authenticated route has a missing or wrong bearer token.",
  AL_ERR_HTTP_NOT_FOUND: "No route of the host matches the request path.",
  AL_ERR_HTTP_METHOD: "The route exists but does not accept the request's HTTP method.",
  AL_ERR_HTTP_BODY_INVALID: "The request body is not valid JSON or lacks a required field.",
  AL_ERR_HTTP_CONTENT_TYPE: "The request body's Content-Type is not one the route accepts.",
  AL_ERR_HTTP_BODY_TOO_LARGE: "The request body is larger than the host's maxBodyBytes.",
  AL_ERR_RATE_LIMITED: "An ingress rate-limit bucket has no tokens left for the request's key.",
  AL_ERR_RATE_LIMIT_CONFIG: "A rate limit has a non-positive capacity or refill rate, or asks for more tokens than it holds.",
  AL_ERR_RATE_LIMIT_STORE: "The shared rate-limiter store could not be reached or answered malformed data.",
  AL_ERR_INGRESS_DISABLED: "The ingress kill switch is engaged; channels accept no new turns.",
  AL_ERR_CHANNEL_SECRET_ENV: "A channel's ingress.requiredSecretEnv has no fully set group at production boot.",
  AL_ERR_CHANNEL_REJECTED: "A channel's normalizeHttp refused the request (e.g. a bad provider signature).",
  AL_ERR_CHANNEL_TURN_INVALID: "A channel's normalizeHttp returned something that is neither a ChannelTurn nor an ack.",
  AL_ERR_ATTACHMENT_REFUSED: "An attachment download was refused: its URL is not http(s) or its host is not allowed.",
  AL_ERR_ATTACHMENT_TOO_LARGE: "An attachment is larger than the host's attachment size cap.",
  AL_ERR_ATTACHMENT_DOWNLOAD: "An attachment download failed (network error, timeout or non-2xx status).",
  AL_ERR_SKILL_DEFINITION: "A skills/<name>/SKILL.md has no description, bad front matter, or names a tool the agent lacks.",
  AL_ERR_SKILL_NOT_FOUND: "load_skill, the skill API or the skills CLI named a skill the agent does not have.",
  AL_ERR_SKILL_READ_ONLY: "A skill write was refused: selfImprovement.writable is not true, so skills are manifest-only.",
  AL_ERR_SKILL_CONFLICT: "A skill changed between reading and writing it (or since its write was approved); nothing was written.",
  AL_ERR_AGENT_INSTRUCTIONS_TWICE: "An agent folder gives instructions both in agent.ts and in instructions.md.",
  AL_ERR_SUBAGENT_DEFINITION: "A subagents/<name>/ folder lacks agent.ts or a description, or holds parts a subagent cannot have.",
  AL_ERR_SUBAGENT_NARROWING: "A subagent names a tool, connection or model its parent does not have; subagents can only narrow.",
  AL_ERR_SUBAGENT_NOT_FOUND: "spawn_subagent or ctx.spawnSubagent named no compiled subagent of the calling agent.",
  AL_ERR_SUBAGENT_LIMIT: "A spawn would pass the subagent depth or per-run count limit.",
  AL_ERR_SUBAGENT_BUSY: "A subagent's run is driven by another process; the parent stays running and recovery resumes both.",
  AL_ERR_SUBAGENT_FAILED: "A subagent's run failed; the spawning tool call gets the child's error.",
  AL_ERR_SUBAGENT_OUTPUT: "A subagent's final output does not match its outputSchema or the expectedOutput schema.",
  AL_ERR_NOT_SUPPORTED: "The agent folder uses an option or file this runtime version declares but does not run yet.",
  AL_ERR_TOOL_CAPABILITY: "A tool's capability metadata or defaultEnabled is malformed or contradicts itself.",
  AL_ERR_DEFAULT_TOOL_UNKNOWN: "agent.ts or a resolver's defaultTools names a tool the run does not have or cannot use.",
  AL_ERR_TOOL_PROVIDED: "A tool added from outside the agent folder (a plugin's tools hook) is malformed or its name is taken.",
} as const;

export type ErrorCode = keyof typeof errorCatalogue;

/**
 * An error a user can act on: `code` is stable, `message` says what happened and
 * with which input, `fix` says what to do.
 */
export class AssemblyLineError extends Error {
  readonly code: ErrorCode;
  readonly fix: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: { fix?: string; cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(options.fix ? `${code}: ${message}\n  fix: ${options.fix}` : `${code}: ${message}`, { cause: options.cause });
    this.name = "AssemblyLineError";
    this.code = code;
    this.fix = options.fix;
    this.details = options.details;
  }
}

export function isAssemblyLineError(error: unknown, code?: ErrorCode): error is AssemblyLineError {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === "AssemblyLineError" &&
    (code === undefined || (error as { code?: unknown }).code === code)
  );
}
