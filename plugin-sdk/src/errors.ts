/**
 * The error catalogue. Every error Assembly Line raises on purpose carries one of
 * these codes; `docs/errors.md` documents each one and a test keeps the two in step.
 */
export const errorCatalogue = {
  AL_ERR_TOOL_NAME: "A tools/ filename stem is not a snake_case tool name of at most 64 characters.",
  AL_ERR_TOOL_DEFINITION: "A tools/ file does not default-export defineTool(...) or disableTool(), or its definition has a field of the wrong kind (needsApproval, sideEffect).",
  AL_ERR_TOOL_SCHEMA: "A tool's inputSchema or outputSchema does not compile as JSON Schema or is not JSON data, or the inputSchema is not an object schema.",
  AL_ERR_DISABLE_UNKNOWN_BUILTIN: "disableTool() in a tools/ file whose name matches no built-in tool.",
  AL_ERR_AGENT_DEFINITION: "agent.ts is missing or does not default-export defineAgent(...).",
  AL_ERR_AGENT_HARNESS_KEY: "agent.ts declares a harness: key; the engine is chosen by the host.",
  AL_ERR_HOOK_DEFINITION: "A hooks/ file does not default-export defineHook(...).",
  AL_ERR_RESOLVER_DEFINITION: "resolvers.ts does not default-export defineRunResolver(...).",
  AL_ERR_CONTEXT_DEFINITION: "context.ts or agent.ts context is not a defineContext/defaultContext policy.",
  AL_ERR_SOURCE_LOAD: "A source file of the agent folder threw while loading.",
  AL_ERR_AGENT_FOLDER: "A file of the agent folder cannot be built as it is: two files of one name, code in an extension the compiler skips, a symbolic link, or an import from outside the folder.",
  AL_ERR_MANIFEST_MISSING: "No built manifest was found; run `assembly-line build` first.",
  AL_ERR_MANIFEST_STALE: "A source file changed after the manifest was built.",
  AL_ERR_MANIFEST_VERSION: "The manifest was written by an incompatible compiler.",
  AL_ERR_STATE_RUNS_REQUIRED: "RuntimeOptions.state has no runs facet.",
  AL_ERR_RUN_CAPACITY: "The runtime is at maxConcurrentRuns and its queue is full.",
  AL_ERR_RUN_NOT_FOUND: "No run with that id exists in the state store.",
  AL_ERR_RUN_NOT_RESUMABLE: "The run is not waiting for the decision or answer that was given.",
  AL_ERR_CONVERSATION_BUSY: "runtime.start was asked to drive a queued run while an older run of its conversation is queued or running.",
  AL_ERR_CHANGE_NOT_APPROVED: "A tool call approved for one change (an automation, a connection) tried to make another in the same call.",
  AL_ERR_APPROVAL_NOT_FOUND: "No pending approval or question matches the given call id.",
  AL_ERR_CONTINUATION_VERSION: "A paused run's continuation was made by an incompatible engine or revision.",
  AL_ERR_HARNESS: "No engine can serve the run's model spec.",
  AL_ERR_RESOLVER_FAILED: "resolvers.ts threw, or returned something that is not a declaration, which fails the run.",
  AL_ERR_TOOL_OUTPUT: "A tool returned a value that is not JSON-serializable or breaks its outputSchema.",
  AL_ERR_STEP_RESULT: "A ctx.step body returned a value, or its metadata held one, that is not JSON-serializable.",
  AL_ERR_BUDGET_EXCEEDED: "A run reached one of its budgets (maxTurns, maxToolCalls, maxTokens, ...); the run failed.",
  AL_ERR_BUDGET_INVALID: "A budget in agent.ts or the host's options is not a positive number.",
  AL_ERR_RUN_MIGRATION: "A paused run cannot move to the current revision: a pending tool is gone or its schema changed.",
  AL_ERR_SCRIPTED_MODEL: "The scripted model file is missing, malformed or exhausted.",
  AL_ERR_HOOK_TAP: "A kernel hook tap threw or answered what its hook cannot use, or a channel tap claimed a route another channel already has; the error names the hook (or route) and the plugins.",
  AL_ERR_EVENT_SEQ: "A state store was asked to append an event out of sequence.",
  AL_ERR_CLI_USAGE: "The command line is missing an argument or has an unknown option.",
  AL_ERR_CLI_CONFIG: "The project config (assembly-line.config.* or package.json \"assembly-line\") cannot be read or has a wrong key or value.",
  AL_ERR_CLI_UNEXPECTED: "A command failed with an error that carries no AL_ERR_ code: a bug, reported with its stack.",
  AL_ERR_TOOL_FAILED: "An authored tool threw; the tool call and its run failed.",
  AL_ERR_SANDBOX_UNAVAILABLE: "A tool asked for the sandbox but the host configured no sandbox adapter, or the sandbox could not serve a file (a read past the adapter's size limit, its file helper failing).",
  AL_ERR_MEMORY_NOT_FOUND: "ctx.memory.read found nothing at that path.",
  AL_ERR_MEMORY_TOO_LARGE: "A memory write's content is larger than MAX_MEMORY_FILE_BYTES (1 MiB of UTF-8); nothing was written.",
  AL_ERR_MEMORY_CONTENT_INVALID: "A memory write's content holds a NUL character or a lone UTF-16 surrogate, which not every state store can keep; nothing was written.",
  AL_ERR_PATH_ESCAPE: "A path leaves its root (.., a symlink, or an absolute host path), or holds a NUL byte, a newline or (a runtime filesystem or ctx.memory path) another control character.",
  AL_ERR_PLUGIN_TIMEOUT: "A plugin's apply or adapter factory did not settle in time.",
  AL_ERR_PLUGIN_APPLY: "A plugin's apply(kernel) threw, or reached for a hook's calls, taps or interceptors, which are the kernel's.",
  AL_ERR_PLUGIN_CONTRACT: "A plugin's live adapter lacks methods of the contract it provides, or a plugin's slot tap broke the slot's rules (it answered another plugin's descriptor, or a `tap()` returned a promise).",
  AL_ERR_SCHEDULER_CONFIG: "A scheduler cannot start with its settings (the local scheduler's leaseMs not below automationCatchUpMs).",
  AL_ERR_GATEWAY_SLOT: "No installed plugin materializes the adapter a gateway.ts slot names.",
  AL_ERR_GATEWAY_DEFINITION: "gateway.ts does not default-export defineGateway(...) with adapter descriptors.",
  AL_ERR_PATH_READ_ONLY: "A write, edit or delete targeted a read-only root (/history, /files, /skills).",
  AL_ERR_PATH_NOT_FOUND: "A runtime filesystem path names nothing, or not what the call needs: a folder where a file is needed, a file where a folder is needed, a symlink the call does not follow.",
  AL_ERR_PATH_TOO_LONG: "A path, or a name in it, is longer than its root allows: a /workspace name over the filesystem's 255 bytes, a /memory path over 1,024 bytes.",
  AL_ERR_PATH_DENIED: "The sandbox's filesystem denied a file call permission (EACCES, EPERM): a command took it away.",
  AL_ERR_CHANNEL_DEFINITION: "A channels/ file does not default-export a valid defineChannel(...) or provider helper.",
  AL_ERR_RUN_LEASE_LOST: "Another replica took over a run's lease while this process was executing it.",
  AL_ERR_TOOL_CALL_ID_REUSED: "An engine reused a tool call id of the run for a different call.",
  AL_ERR_KERNEL_HOST_MISSING: "Plugin loading was asked for before the host installed its kernel with useKernelHost().",
  AL_ERR_EVENT_TYPE_RESERVED: "ctx.emit was given an empty event type or one in a namespace the runtime records (run., tool., budget., skill., subagent., ...).",
  AL_ERR_MODEL_UNKNOWN: "A model spec names no model in the pi-ai catalog nor in piAgentHarness({ models }).",
  AL_ERR_MODEL_API_KEY: "No API key for the model's provider: neither piAgentHarness({ apiKeys }) nor its environment variable.",
  AL_ERR_MODEL_PROVIDER: "The model provider refused the request, or kept failing after the bounded retries.",
  AL_ERR_STATE_CONFIG: "A state adapter has no usable settings: DATABASE_URL unset or malformed, a login the server refused or a database it lacks, an unknown or ill-typed option.",
  AL_ERR_STATE_SCHEMA_NEWER: "The state database was migrated by a newer adapter version than the one booting.",
  AL_ERR_STATE_MIGRATION: "Applying the state schema migrations failed, or an applied migration differs from the code's.",
  AL_ERR_STATE_ROW_INVALID: "A state store row holds a value the contract does not allow (e.g. edited by hand).",
  AL_ERR_STATE_INPUT_INVALID: "A state store method was called with a value the contract does not allow, or text the store cannot hold as it is (PostgreSQL: NUL or a lone surrogate in a text column).",
  AL_ERR_STATE_UNAVAILABLE: "The state database could not be reached, or dropped the connection mid-operation.",
  AL_ERR_STATE_QUERY: "The state database rejected a statement.",
  AL_ERR_STATE_LOCKED: "Another live process holds the local state folder's lock, or the adapter holding it was closed.",
  AL_ERR_STATE_COMPACTION: "The local file state could not fold its log into a new snapshot (a full disk, or a row too long to read back); nothing was lost, and it tries again later. A process warning, not a call's error.",
  AL_ERR_SANDBOX_DEFINITION: "sandbox.ts or a sandbox adapter's options are invalid (e.g. a workingDirectory other than /workspace), or so is what a sandbox call was given: an exec command or option it would misread (an unknown option, an env value that is no string, a NUL byte in the command or an env value), or writeFile content that is neither a string nor a Uint8Array (refused before the file is touched).",
  AL_ERR_PLUGIN_MANIFEST: "A plugin package's package.json has no assemblyLine block, or the block breaks plugin-schema.json (including an unbounded kernel range).",
  AL_ERR_PLUGIN_KERNEL_MISMATCH: "A plugin's assemblyLine.kernel range does not include the running kernel's version, or its range on @assemblyline-agents/core does not include the host's core.",
  AL_ERR_PLUGIN_IMPORT: "A plugin package's main module is missing or threw while importing.",
  AL_ERR_PLUGIN_EXPORT: "A plugin package lacks its `plugin` export or an export its manifest names, or one of them returns the wrong thing.",
  AL_ERR_PLUGIN_CONFIG_SCHEMA: "A plugin's configSchema file lies outside its package (a path or a symbolic link leading out), is missing, is not JSON, or is not a JSON Schema ajv compiles.",
  AL_ERR_PLUGIN_OPTIONS: "The options a gateway.ts helper passes to a plugin's adapter, or a plugin factory is called with, break the plugin's config schema.",
  AL_ERR_PLUGIN_NOT_FOUND: "No installed package declares the plugin id a gateway.ts slot or a `plugins` command names.",
  AL_ERR_PLUGIN_DUPLICATE_ID: "Two different installed packages declare the same plugin id.",
  AL_ERR_PLUGIN_INSTALL: "npm could not install a plugin package for `assembly-line plugins add`.",
  AL_ERR_GATEWAY_ENV: "A production boot is missing environment variables that the gateway's plugins declare required.",
  AL_ERR_VERIFY_RUNNER_MISSING: "`plugins verify` found no vitest beside @assemblyline-agents/core/testkit to run a conformance kit.",
  AL_ERR_REGISTRY_INVALID: "registry/index.json or registry/generated.json breaks its schema, or names a package that is missing or disagrees with it.",
  AL_ERR_HOST_CONFIG: "A listenNodeRuntime option or its environment variable has an invalid value.",
  AL_ERR_HOST_AUTH_REQUIRED: "A production request reached a route that needs host auth, and the host configured none.",
  AL_ERR_HOST_DRAINING: "The host is shutting down and accepts no new work.",
  AL_ERR_HOST_SHUTDOWN: "A step of the host's graceful shutdown failed (the others ran); details.steps names them.",
  AL_ERR_HOST_INTERNAL: "An HTTP endpoint failed unexpectedly; the host logged the cause.",
  AL_ERR_HTTP_UNAUTHORIZED: "A request to an authenticated route has a missing or wrong bearer token.",
  AL_ERR_HTTP_NOT_FOUND: "No route of the host matches the request path.",
  AL_ERR_HTTP_TARGET_INVALID: "The request target is neither a path nor an http(s) URL the host can read.",
  AL_ERR_HTTP_METHOD: "The route exists but does not accept the request's HTTP method.",
  AL_ERR_HTTP_BODY_INVALID: "The request body is not valid JSON or lacks a required field.",
  AL_ERR_HTTP_CONTENT_TYPE: "The request body's Content-Type is not one the route accepts.",
  AL_ERR_HTTP_BODY_TOO_LARGE: "The request body is larger than the host's maxBodyBytes.",
  AL_ERR_HTTP_BODY_TIMEOUT: "The request body stopped arriving: a pause longer than the host's bodyIdleTimeoutMs while it was read (answered 408, connection closed).",
  AL_ERR_HTTP_REQUEST_TIMEOUT: "The request did not arrive in time: its headers within the host's headersTimeoutMs, or the whole request within requestTimeoutMs (answered 408, connection closed).",
  AL_ERR_HTTP_MALFORMED: "Node's HTTP parser could not read the request (a malformed request line, header or chunked body): answered 400 before routing or auth.",
  AL_ERR_HTTP_HEADERS_TOO_LARGE: "The request's headers are larger than Node's limit (16 KiB by default): answered 431 before routing or auth.",
  AL_ERR_RATE_LIMITED: "An ingress rate-limit bucket has no tokens left for the request's key.",
  AL_ERR_RATE_LIMIT_CONFIG: "A rate limit has a non-positive capacity or refill rate, or asks for more tokens than it holds.",
  AL_ERR_RATE_LIMIT_STORE: "The shared rate-limiter store could not be reached or answered malformed data.",
  AL_ERR_INGRESS_DISABLED: "The ingress kill switch is engaged; channels accept no new turns.",
  AL_ERR_INGRESS_EVENT_TAKEN: "A channel turn's event id (a raw route's Idempotency-Key) already started a run of another agent in the shared state store (answered 409).",
  AL_ERR_IDEMPOTENCY_KEY_REUSED: "A raw channel route's Idempotency-Key already started a run for a different request (another message or conversationId); nothing was started (answered 422).",
  AL_ERR_CHANNEL_SECRET_ENV: "A channel's ingress.requiredSecretEnv has no fully set group at production boot.",
  AL_ERR_CHANNEL_REJECTED: "A channel's normalizeHttp refused the request (e.g. a bad provider signature).",
  AL_ERR_CHANNEL_TURN_INVALID: "A channel's normalizeHttp returned something that is neither a ChannelTurn nor an ack.",
  AL_ERR_CHANNEL_TIMEOUT: "A channel's normalizeHttp did not answer within the host's requestTimeoutMs; the request was answered 503 and nothing was accepted.",
  AL_ERR_DISCORD_SIGNATURE: "A request to the Discord channel lacks a valid Ed25519 signature or has a stale timestamp (answered 401).",
  AL_ERR_DISCORD_INTERACTION: "A signed request to the Discord channel is not an interaction this channel handles (answered 400).",
  AL_ERR_DISCORD_CONFIG: "defineDiscordChannel options are invalid, or the application's public key is not set or malformed.",
  AL_ERR_DISCORD_DELIVERY: "Delivering a reply through Discord's follow-up webhook failed (the outbox retries it).",
  AL_ERR_DISCORD_ATTACHMENT: "A Discord turn's attachment is not on an allowed attachment host.",
  AL_ERR_CODEX_LOGIN: "An openai-codex/* run found no Codex CLI login session in CODEX_HOME.",
  AL_ERR_CODEX_UNAVAILABLE: "The codex binary for the openai-codex/* route could not be started.",
  AL_ERR_CODEX_APP_SERVER: "The Codex app-server refused a request or exited during a turn.",
  AL_ERR_CODEX_TOOL_NAME: "An agent tool on the openai-codex/* route has the name of a tool the Codex app-server keeps for itself (request_user_input, exec_command).",
  AL_ERR_ATTACHMENT_REFUSED: "An attachment download was refused: its URL is not http(s) or its host is not allowed.",
  AL_ERR_ATTACHMENT_TOO_LARGE: "An attachment is larger than the host's attachment size cap.",
  AL_ERR_ATTACHMENT_DOWNLOAD: "An attachment download failed (network error, timeout or non-2xx status).",
  AL_ERR_AUTOMATION_DEFINITION: "An automations/ file does not default-export a valid defineAutomation(...).",
  AL_ERR_AUTOMATION_SCHEDULE: "An automation schedule is not a valid cron expression, time zone, interval or one-shot time.",
  AL_ERR_AUTOMATION_INPUT: "ctx.automationManager was given a bad automation (name, message, fields) or asked to change a static one.",
  AL_ERR_AUTOMATION_NOT_FOUND: "No automation of this agent has that name (or a schedule row belongs to another agent).",
  AL_ERR_AUTOMATION_CONFLICT: "An automation kept changing (other hosts or runs writing it) between each read and write of a change, which was given up; nothing of it was written.",
  AL_ERR_CONNECTION_DEFINITION: "A connection definition (host option or ctx.connectionManager.add) is malformed.",
  AL_ERR_CONNECTION_REFUSED: "A dynamic connection was refused: dynamic connections are off, the name is taken (or the host's), its host is not in allowedHosts, or its grant is not listed in dynamicConnections.grants for that host (also checked on every request it sends).",
  AL_ERR_CONNECTION_FAILED: "A connection could not be reached or described (MCP handshake, OpenAPI document, tool listing), or did not answer a request within `requestTimeoutMs`, or answered more than `maxResponseBytes`.",
  AL_ERR_CONNECTIONS_UNAVAILABLE: "A run used ctx.connectionManager or a host declared connections, but no connections provider is installed.",
  AL_ERR_GRANT_MISSING: "A connection's auth names a grant the host's grant store does not hold.",
  AL_ERR_GRANT_KEY: "The encrypted grant store has no usable key (ASSEMBLY_LINE_SECRET_KEY unset or too short), a grant does not decrypt with it (a store sealed under another key), or its file is not a grant store.",
  AL_ERR_OUTBOUND_ADDRESS_REFUSED: "An outbound request's host is, or resolved to, a loopback, private, link-local, metadata or other special address its policy does not allow.",
  AL_ERR_OUTBOUND_HOST_REFUSED: "An outbound request's URL is not http(s), its host is outside the policy's allowedHosts, or it carries credentials to a host outside credentialHosts.",
  AL_ERR_OUTBOUND_REDIRECT: "An outbound request was redirected more often than the policy's maxRedirects, against redirect: \"error\", with a streamed body, or to another origin with an origin-bound query secret in its path.",
  AL_ERR_OUTBOUND_POLICY: "An OutboundPolicy option has an invalid value.",
  AL_ERR_NOT_SUPPORTED: "The agent folder uses an option or file this runtime version declares but does not run yet.",
  AL_ERR_TOOL_CAPABILITY: "A tool's capability metadata or defaultEnabled is malformed or contradicts itself.",
  AL_ERR_TOOL_POLICY: "A coreToolPolicy (agent.ts, RuntimeOptions or ASSEMBLY_LINE_BASH_TOOL_MODE) has a mode other than enabled, approval or disabled, or names a tool the agent does not have.",
  AL_ERR_DEFAULT_TOOL_UNKNOWN: "agent.ts or a resolver's defaultTools names a tool the run does not have or cannot use.",
  AL_ERR_TOOL_PROVIDED: "A tool added from outside the agent folder (a plugin's tools hook) is malformed or its name is taken.",
  AL_ERR_SKILL_DEFINITION: "A skills/<name>/SKILL.md has no description, bad front matter, or names a tool the agent lacks.",
  AL_ERR_SKILL_NOT_FOUND: "load_skill, the skill API or the skills CLI named a skill the agent does not have.",
  AL_ERR_SKILL_READ_ONLY: "A skill write was refused: selfImprovement.writable is not true, so skills are manifest-only.",
  AL_ERR_SKILL_CONFLICT: "A skill changed between reading and writing it (or since its write was approved); nothing was written.",
  AL_ERR_AGENT_INSTRUCTIONS_TWICE: "An agent folder gives instructions both in agent.ts and in instructions.md.",
  AL_ERR_RUNTIME_RESOURCES: "RuntimeOptions.resources is not an object of named handles.",
  AL_ERR_KERNEL_IN_USE: "RuntimeOptions.kernel is a kernel another runtime was given; a kernel serves one runtime.",
  AL_ERR_SUBAGENT_DEFINITION: "A subagents/<name>/ folder lacks agent.ts or a description, or holds parts a subagent cannot have.",
  AL_ERR_SUBAGENT_NARROWING: "A subagent names a tool, connection or model its parent does not have; subagents can only narrow.",
  AL_ERR_SUBAGENT_NOT_FOUND: "spawn_subagent or ctx.spawnSubagent named no compiled subagent of the calling agent.",
  AL_ERR_SUBAGENT_INPUT: "spawn_subagent or ctx.spawnSubagent was given a bad request (a blank task, a field it does not know, a field of the wrong type), or a replayed tool spawned another subagent than before.",
  AL_ERR_SUBAGENT_LIMIT: "A spawn would pass the subagent depth or per-run count limit.",
  AL_ERR_SUBAGENT_BUSY: "A subagent's run is driven by another process; the parent stays running and recovery resumes both.",
  AL_ERR_SUBAGENT_FAILED: "A subagent's run failed; the spawning tool call gets the child's error.",
  AL_ERR_SUBAGENT_PARENT_ENDED: "A subagent run left part-way (stopped by its parent's maxDurationMs pause, or by a crash) was failed because its parent ended: the pause was denied, or the parent failed or completed since.",
  AL_ERR_SUBAGENT_OUTPUT: "A subagent's final output does not match its outputSchema or the expectedOutput schema.",
  AL_ERR_INSTRUMENTATION_DEFINITION: "instrumentation.ts does not default-export defineInstrumentation(...) with a setup function and a known captureContent.",
  AL_ERR_INSTRUMENTATION_SETUP: "instrumentation.ts setup() threw at startup or returned something that is not a TelemetrySink.",
  AL_ERR_OTLP_CONFIG: "The OTLP sink's endpoint, headers, compression, resource attributes or limits are invalid, or the environment sets a TLS file variable the sink does not read.",
  AL_ERR_BLOB_CONFIG: "A blob adapter has no usable settings (no bucket, no R2 account id, half a key pair, a malformed endpoint or part size).",
  AL_ERR_BLOB_UNAVAILABLE: "The blob service refused or failed a request (unreachable endpoint, missing bucket, bad keys).",
  AL_ERR_BLOB_KEY: "A blob key is empty or not a string, has an empty, `.` or `..` segment, holds a NUL (S3: any control character, U+0000 to U+001F), a backslash or a lone surrogate (not well-formed Unicode), or is longer than the store allows (S3: 1,024 bytes with the prefix; the local store: a path Linux can open).",
  AL_ERR_SANDBOX_ENGINE: "The sandbox engine (e.g. the Docker engine) could not be reached or refused an operation.",
  AL_ERR_SANDBOX_IMAGE: "A sandbox or deploy image is not present on the engine and could not be pulled.",
  AL_ERR_SANDBOX_ADAPTER_NOT_INSTALLED: "sandbox.ts names an adapter whose plugin package is not installed.",
  AL_ERR_SNAPSHOT_DISABLED: "A sandbox snapshot was asked for, but the sandbox has no snapshot policy.",
  AL_ERR_SNAPSHOT_NOT_FOUND: "No snapshot with that id (or none at all) exists for the sandbox key.",
  AL_ERR_DEPLOY_CONFIG: "A deploy target's options or the `deploy` command line are invalid (unknown target, missing host, bad port).",
  AL_ERR_DEPLOY_BUILD: "Building the deploy artifact or image failed; nothing was replaced.",
  AL_ERR_DEPLOY_UNHEALTHY: "The new release did not answer /readyz in time; it was removed and the previous release keeps serving.",
  AL_ERR_DEPLOY_TRANSPORT: "A deploy step on the target failed: on a vps host (ssh, rsync/scp, or a remote command), a platform CLI's command, or the Docker engine a docker deploy uses.",
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

/**
 * What an AssemblyLineError says, without the code its `message` starts with and the fix it ends
 * with: to wrap it in an error of one's own, or to show the parts apart.
 */
export function errorSummary(error: AssemblyLineError): string {
  let text = error.message;
  const head = `${error.code}: `;
  if (text.startsWith(head)) text = text.slice(head.length);
  const tail = error.fix === undefined ? undefined : `\n  fix: ${error.fix}`;
  if (tail !== undefined && text.endsWith(tail)) text = text.slice(0, -tail.length);
  return text;
}

export function isAssemblyLineError(error: unknown, code?: ErrorCode): error is AssemblyLineError {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === "AssemblyLineError" &&
    (code === undefined || (error as { code?: unknown }).code === code)
  );
}
