import {
  AssemblyLineError,
  credentialInUrl,
  quotedUrl,
  isAssemblyLineError,
  openApiServerUrl,
  type ConnectionDefinition,
  type ConnectionInfo,
  type ConnectionManager,
  type ConnectionPolicy,
  type ConnectionProvider,
  type DynamicConnectionSpec,
  type JsonValue,
  type RuntimeLogger,
  type RuntimeSettingsStore,
} from "@assemblyline-agents/core";
import { digestJson } from "../canonical-json.js";
import type { ChangeGate } from "../run/change-approval.js";
import type { SkillChangeJournal } from "../skills/durable-skill-change.js";
import type { ToolTable } from "../run/tool-table.js";
import { grantBindingsProblem, hostMatches } from "./grant-bindings.js";

const NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
/** A host connection that could not be described is tried again this long after, doubling with each failure... */
export const RETRY_FIRST_MS = 1_000;
/** ...up to this. */
const RETRY_MAX_MS = 5 * 60_000;
/**
 * How long a turn waits for a connection's first describe (a stdio server may
 * take seconds to start), and for a retry, before going on without the
 * connection: the describe goes on, for a later turn.
 */
export const DESCRIBE_WAIT_MS = { first: 15_000, retry: 2_000 };
/** The `provider` of every tool a connection provides (ToolTableEntry.provider). */
export const CONNECTION_TOOL_PROVIDER = "connections";

interface StoredConnection {
  spec: DynamicConnectionSpec;
  /** What the provider described (tool list, ...): JSON without secrets. */
  record: JsonValue;
  addedBy: string;
}

/**
 * The agent's connections as tools: host-declared ones described once per
 * process, dynamic ones persisted in the settings facet (key
 * `connections:<agentId>`) so every replica and every resume provides the same
 * tools. Each turn starts with `refresh()`, which adds to the tool table what
 * this process has not provided yet. The protocols live in the provider plugin.
 */
export class ConnectionRegistry {
  /** What each connection's tools were made from: the provider's release is handed the same. */
  private readonly provided = new Map<string, { digest: string; info: ConnectionInfo; definition: ConnectionDefinition | DynamicConnectionSpec; policy: ConnectionPolicy }>();
  /** Host connections whose describe failed: how often in a row, and when to try again. */
  private readonly failedStatic = new Map<string, { failures: number; retryAt: number }>();
  /** Describes under way, shared by the turns that refresh meanwhile. */
  private readonly describing = new Map<string, Promise<void>>();
  private warnedNoProvider = false;
  /** Stored run-added connections not provided because the host or the folder declares the name (warned once each). */
  private readonly warnedShadowed = new Set<string>();
  /** Stored run-added connections not provided because allowedHosts no longer allows their host (warned once each). */
  private readonly warnedOutside = new Set<string>();
  /** Stored run-added connections the provider could not make tools from, by name and digest (warned once each). */
  private readonly warnedUnreadable = new Set<string>();
  private warnedDynamicOff = false;
  private changes = 0;
  /** This process's writes of the stored connections, one at a time. */
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly parts: {
      provider: ConnectionProvider | undefined;
      /** connections/*.ts of the agent folder (the provider's own host-declared ones come first). */
      folder: Record<string, ConnectionDefinition>;
      table: ToolTable;
      settings: RuntimeSettingsStore;
      agentId: string;
      /** agent.ts dynamicConnections; `grants`: grant id -> the hosts a run's connection may send it to (absent: none). */
      dynamic: { dynamic: boolean; approval: boolean; allowedHosts: string[]; grants?: Record<string, string[]> };
      logger: RuntimeLogger;
    },
  ) {
    // A manifest is checked when built; one written or edited by hand is checked here, at boot.
    const wrong = parts.dynamic.grants === undefined ? undefined : grantBindingsProblem(parts.dynamic.grants, parts.dynamic.allowedHosts);
    if (wrong) throw new AssemblyLineError("AL_ERR_AGENT_DEFINITION", `the manifest's dynamicConnections.${wrong.problem}`, { fix: `${wrong.fix} Then build the agent again.` });
    // One name, one connection: which of the two a run would get is not for the runtime to pick.
    const hostDeclared = parts.provider?.connections ?? {};
    const twice = Object.keys(parts.folder).filter((name) => Object.hasOwn(hostDeclared, name));
    if (twice.length > 0) {
      const [name] = twice;
      throw new AssemblyLineError(
        "AL_ERR_CONNECTION_DEFINITION",
        `connection "${name}" is declared twice: by the agent folder (connections/${name}.ts) and by the host (createConnections({ connections: { ${name} } }))${twice.length > 1 ? `; so are ${twice.slice(1).map((other) => `"${other}"`).join(", ")}` : ""}`,
        { fix: `Rename one of them: the file connections/${name}.ts (its tools are <file name>__<tool>), or the key in createConnections({ connections }).` },
      );
    }
  }

  private get key(): string {
    return `connections:${this.parts.agentId}`;
  }

  /**
   * A run's connection reaches the agent's allowedHosts; its grant, if any, only the hosts
   * dynamicConnections.grants binds it to (none when unlisted: its calls then fail before the
   * secret is attached). The provider enforces grantHosts on every request it sends.
   */
  private dynamicPolicy(spec: DynamicConnectionSpec): ConnectionPolicy {
    const policy: ConnectionPolicy = { allowedHosts: this.parts.dynamic.allowedHosts, onlyAllowedHosts: true };
    return spec.auth ? { ...policy, grantHosts: this.grantHosts(spec.auth.grant) ?? [] } : policy;
  }

  private grantHosts(grant: string): string[] | undefined {
    const grants = this.parts.dynamic.grants ?? {};
    return Object.hasOwn(grants, grant) ? grants[grant] : undefined;
  }

  /** Names the host (createConnections) or the agent folder (connections/*.ts) declares: never a run's. */
  private declared(): Set<string> {
    return new Set([...Object.keys(this.parts.folder), ...Object.keys(this.parts.provider?.connections ?? {})]);
  }

  /**
   * Provide the tools of every connection this process has not provided yet. A
   * host connection is described once, turns waiting for it a while
   * (DESCRIBE_WAIT_MS); one that failed is tried again after a backoff, so a
   * service that is down or never answers does not slow every turn.
   */
  async refresh(): Promise<void> {
    const { provider, folder } = this.parts;
    if (!provider) {
      if (Object.keys(folder).length > 0 && !this.warnedNoProvider) {
        this.warnedNoProvider = true;
        this.parts.logger.warn({ event: "connection.unavailable", connections: Object.keys(folder) }, "connections/ declares connections but the host installed no connections provider (AL_ERR_CONNECTIONS_UNAVAILABLE); their tools are missing");
      }
      return;
    }
    const pending: Array<Promise<void>> = [];
    // The constructor refused a name both declare: the two sets do not overlap.
    for (const [name, definition] of Object.entries({ ...folder, ...(provider.connections ?? {}) })) {
      if (this.provided.has(name)) continue;
      const failed = this.failedStatic.get(name);
      if (failed && Date.now() < failed.retryAt) continue;
      let describing = this.describing.get(name);
      if (!describing) {
        describing = this.describeStatic(provider, name, definition).finally(() => this.describing.delete(name));
        this.describing.set(name, describing);
      }
      pending.push(waitAtMost(describing, failed ? DESCRIBE_WAIT_MS.retry : DESCRIBE_WAIT_MS.first));
    }
    await Promise.all(pending);
    const stored = await this.stored();
    const declared = this.declared();
    // Provided, of the stored ones: with dynamic connections off, none; else those whose hosts allowedHosts still allows.
    const served = this.parts.dynamic.dynamic ? stored : {};
    if (!this.parts.dynamic.dynamic) this.warnWithheld(Object.keys(stored).filter((name) => !declared.has(name)));
    for (const [name, entry] of Object.entries(served)) {
      const outside = specHosts(entry.spec).find((host) => !hostMatches(host, this.parts.dynamic.allowedHosts));
      if (outside !== undefined) {
        if (!this.warnedOutside.has(name)) {
          this.warnedOutside.add(name);
          this.parts.logger.warn(
            { event: "connection.withheld", connection: name, host: outside, addedBy: entry.addedBy },
            `a run-added connection "${name}" is stored, but its host ${outside} is not in agent.ts dynamicConnections.allowedHosts; its tools are not offered (list the host again to bring it back, or remove it with ctx.connectionManager.remove)`,
          );
        }
        delete served[name];
        continue;
      }
      if (declared.has(name)) {
        // Stored before the host declared the name (add refuses it now): the host's connection stays its own.
        if (!this.warnedShadowed.has(name)) {
          this.warnedShadowed.add(name);
          this.parts.logger.warn({ event: "connection.name_taken", connection: name, addedBy: entry.addedBy }, `a run-added connection "${name}" is stored, but the host or the agent folder declares that name; the host's connection is used and the run's is ignored (remove it with ctx.connectionManager.remove)`);
        }
        continue;
      }
      const digest = digestJson(entry as unknown as JsonValue);
      if (this.provided.get(name)?.digest === digest) continue;
      this.withdraw(name);
      try {
        this.provide(name, "dynamic", entry.spec, entry.record, this.dynamicPolicy(entry.spec), digest);
      } catch (error) {
        // One unreadable stored row (written by hand, or by an older release) withholds its own connection, not every run's others.
        if (!this.warnedUnreadable.has(`${name}:${digest}`)) {
          this.warnedUnreadable.add(`${name}:${digest}`);
          this.parts.logger.warn(
            { event: "connection.withheld", connection: name, addedBy: entry.addedBy, err: errorText(error) },
            `a run-added connection "${name}" is stored, but its tools could not be made from it (${errorText(error)}); it is not offered, the other connections are (remove it with ctx.connectionManager.remove and add it again)`,
          );
        }
      }
    }
    for (const [name, provided] of this.provided) if (provided.info.source === "dynamic" && !(name in served)) this.withdraw(name);
  }

  /** Say once that the stored run-added connections are kept but not provided while dynamic connections are off. */
  private warnWithheld(names: string[]): void {
    if (names.length === 0 || this.warnedDynamicOff) return;
    this.warnedDynamicOff = true;
    this.parts.logger.warn(
      { event: "connection.withheld", connections: names },
      `${names.length} stored run-added connection${names.length === 1 ? " is" : "s are"} withheld because agent.ts dynamicConnections.dynamic is off (${names.join(", ")}); they are kept, and offered again once it is on`,
    );
  }

  /** Describe a host connection and provide its tools; a failure is remembered with when to try again. Never throws. */
  private async describeStatic(provider: ConnectionProvider, name: string, definition: ConnectionDefinition): Promise<void> {
    try {
      const policy = staticPolicy(definition);
      this.provide(name, "static", definition, await provider.describe(name, definition, policy), policy);
      this.failedStatic.delete(name);
    } catch (error) {
      // A host connection that is down must not fail every run: its tools are missing until it answers.
      const failures = (this.failedStatic.get(name)?.failures ?? 0) + 1;
      const retryInMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1));
      this.failedStatic.set(name, { failures, retryAt: Date.now() + retryInMs });
      if (failures === 1) this.parts.logger.warn({ event: "connection.unavailable", connection: name, err: errorText(error), retryInMs }, "a connection could not be described; its tools are missing until a later turn describes it");
    }
  }

  /** Counts the connections provided and withdrawn: what was derived from the tool table is stale once it moved. */
  get version(): number {
    return this.changes;
  }

  /** ctx.connections: what this run can use. */
  connections(): Record<string, ConnectionInfo> {
    return Object.fromEntries([...this.provided].map(([name, entry]) => [name, entry.info]));
  }

  /**
   * ctx.connectionManager for one tool call of run `runId`. With the call's `journal`, a removal is
   * two steps (whether the connection was there, then the removal), so a call that runs again after
   * a crash that came after the write still answers `{ removed: true }`; an addition's write is one step.
   */
  manager(gate: ChangeGate, runId: string, journal?: SkillChangeJournal): ConnectionManager {
    let removals = 0;
    let adds = 0;
    const removeNow = async (name: string): Promise<{ removed: boolean }> => {
      const stored = await this.stored();
      if (!(name in stored)) return { removed: false };
      gate.require(`The agent asks to remove the connection "${name}".`, { action: "remove", connection: name });
      await this.writeStored(name, undefined, { actor: `run:${runId}`, reason: `connection ${name} removed` });
      // A stored entry the host's name shadows was never provided: the tools under that name are the host's.
      if (this.provided.get(name)?.info.source === "dynamic") this.withdraw(name);
      return { removed: true };
    };
    return {
      list: async () => {
        await this.refresh();
        return Object.values(this.connections());
      },
      add: async (spec) => {
        const provider = this.requireProvider();
        const checked = checkSpec(spec, this.parts.dynamic.allowedHosts);
        // A host connection not described yet (or whose describe failed) is not in `provided`: its name is the host's all the same.
        if (this.declared().has(checked.name)) {
          throw new AssemblyLineError("AL_ERR_CONNECTION_REFUSED", `"${checked.name}" is the name of a connection the host or the agent folder declares`, { fix: "Pick another name for the run's connection." });
        }
        const existing = (await this.stored())[checked.name];
        // The same add by the same run: its tool call ran again after a crash that came after the write, so it is done.
        if (existing && existing.addedBy === runId && digestJson(existing.spec as unknown as JsonValue) === digestJson(checked as unknown as JsonValue)) {
          await this.refresh();
          const info = this.provided.get(checked.name)?.info;
          if (info) return info;
        }
        if (this.provided.has(checked.name) || existing) throw alreadyExists(checked.name);
        const grantHosts = checked.auth ? this.checkGrant(checked, checked.auth.grant) : undefined;
        gate.require(`The agent asks to connect to ${describeTarget(checked, grantHosts)} as "${checked.name}".`, { action: "add", connection: checked as unknown as JsonValue });
        const record = await provider.describe(checked.name, checked, this.dynamicPolicy(checked));
        const write = () => this.writeStored(checked.name, { spec: checked, record, addedBy: runId }, { actor: `run:${runId}`, reason: `connection ${checked.name} added` });
        // A step of the call: its runner refuses the write when the run stopped waiting for the call during the describe.
        if (journal) await journal.step(`${journal.prefix}:add:${adds++}`, async () => (await write(), null));
        else await write();
        await this.refresh();
        const info = this.provided.get(checked.name)?.info;
        // Only when the step was replayed and the connection removed since: nothing of it is left to answer with.
        if (!info) throw new AssemblyLineError("AL_ERR_CONNECTION_REFUSED", `connection "${checked.name}" was added, then removed before this call returned`, { fix: "Add it again if the run still needs it." });
        return info;
      },
      remove: async (name) => {
        if (!journal) return removeNow(name);
        const key = `${journal.prefix}:remove:${removals++}`;
        const before = await journal.step(`${key}:before`, async () => ({ stored: name in (await this.stored()) }));
        return journal.step(`${key}:change`, async () => {
          const result = await removeNow(name);
          // Gone now though it was there before this call: the removal landed before a crash.
          return before.stored && !result.removed ? { removed: true } : result;
        });
      },
    };
  }

  /**
   * The hosts `spec`'s grant may be sent to. A grant dynamicConnections.grants does not list is
   * refused, and so is a spec whose own URL would carry it elsewhere; where an OpenAPI document
   * sends the calls is only known once fetched, so every request is checked again as it is sent.
   */
  private checkGrant(spec: DynamicConnectionSpec, grant: string): string[] {
    const hosts = this.grantHosts(grant);
    if (!hosts) {
      const listed = Object.keys(this.parts.dynamic.grants ?? {});
      throw new AssemblyLineError("AL_ERR_CONNECTION_REFUSED", `connection "${spec.name}": grant "${grant}" is not listed in agent.ts dynamicConnections.grants (${listed.length ? `it lists ${listed.map((id) => `"${id}"`).join(", ")}` : "it lists none"}), so a run's connection may not use it`, {
        fix: `If runs may send that grant, add it with the hosts it may go to: dynamicConnections: { grants: { ${JSON.stringify(grant)}: ["api.example.com"] } } in agent.ts; else connect without auth or with a listed grant.`,
      });
    }
    const url = spec.kind === "mcp" ? spec.url : spec.kind === "http" ? spec.baseUrl : (spec.baseUrl ?? spec.spec);
    const host = new URL(url).hostname;
    if (!hostMatches(host, hosts)) {
      throw new AssemblyLineError("AL_ERR_CONNECTION_REFUSED", `connection "${spec.name}": grant "${grant}" may be sent only to ${hosts.join(", ")} (agent.ts dynamicConnections.grants), not to ${host}`, {
        fix: `Connect to a service on ${hosts.join(", ")}, or list ${host} under dynamicConnections.grants[${JSON.stringify(grant)}] (and allowedHosts) if that grant may go there.`,
      });
    }
    return hosts;
  }

  private provide(name: string, source: "static" | "dynamic", definition: ConnectionDefinition | DynamicConnectionSpec, record: JsonValue, policy: ConnectionPolicy, digest = ""): void {
    const tools = this.parts.provider!.tools(name, definition, record, policy);
    for (const [toolName, tool] of Object.entries(tools)) {
      if (this.parts.table.has(toolName)) this.parts.table.delete(toolName);
      this.parts.table.provide(toolName, tool, { provider: CONNECTION_TOOL_PROVIDER });
    }
    this.provided.set(name, { digest, definition, policy, info: { name, kind: definition.kind, source, description: definition.description ?? "", tools: Object.keys(tools).sort() } });
    this.changes += 1;
  }

  /**
   * Take a connection's tools out of the table and let the provider close what it holds for it.
   * The release is not awaited: a turn does not wait on a server ending its session.
   */
  private withdraw(name: string): void {
    const provided = this.provided.get(name);
    if (!provided) return;
    for (const tool of provided.info.tools) this.parts.table.delete(tool);
    this.provided.delete(name);
    this.changes += 1;
    const provider = this.parts.provider;
    if (!provider?.release) return;
    void Promise.resolve()
      .then(() => provider.release!(name, provided.definition, provided.policy))
      .catch((error: unknown) => {
        this.parts.logger.warn({ event: "connection.release_failed", connection: name, err: errorText(error) }, `connection "${name}" was withdrawn, but the provider failed to close what it held for it`);
      });
  }

  private async stored(): Promise<Record<string, StoredConnection>> {
    return storedOf(await this.parts.settings.getSetting(this.key));
  }

  /**
   * Set one stored connection (`entry`), or delete it (undefined). Every replica writes the whole
   * map, so a write can replace what another wrote since it was read: putSetting hands back the
   * value it replaced (read under the row's lock), and while that is not what the change was made
   * on, the change is made again on the value now stored, with what the last write dropped put
   * back. An add whose name another writer took meanwhile leaves theirs and is refused.
   */
  private async writeStored(name: string, entry: StoredConnection | undefined, audit: { actor: string; reason: string }): Promise<void> {
    const write = this.writing.then(async () => {
      let base = await this.stored();
      /** Other writers' values this process's writes replaced, by name (undefined: they had deleted it). */
      const dropped = new Map<string, StoredConnection | undefined>();
      let written: Record<string, StoredConnection> = {};
      let taken = false;
      for (let attempt = 0; attempt < STORE_WRITE_ATTEMPTS; attempt += 1) {
        const next = { ...base };
        for (const [other, value] of dropped) {
          // Put back only what no one changed since this process's write replaced it.
          if (digestJson(next[other] ?? null) !== digestJson(written[other] ?? null)) continue;
          if (value === undefined) delete next[other];
          else next[other] = value;
        }
        if (!taken) {
          if (entry === undefined) delete next[name];
          else next[name] = entry;
        }
        const { previous } = await this.parts.settings.putSetting(this.key, next as unknown as JsonValue, audit);
        const replaced = storedOf(previous);
        if (digestJson(replaced) === digestJson(base)) {
          if (taken) throw alreadyExists(name);
          return;
        }
        for (const other of new Set([...Object.keys(replaced), ...Object.keys(base)])) {
          if (digestJson(replaced[other] ?? null) === digestJson(base[other] ?? null)) continue;
          dropped.set(other, replaced[other]);
          // Another writer set the name this add sets: theirs came first.
          if (other === name && entry !== undefined && replaced[other] !== undefined) taken = true;
        }
        written = next;
        base = await this.stored();
      }
      throw new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", `the stored connections (setting ${this.key}) changed under every one of ${STORE_WRITE_ATTEMPTS} writes; connection "${name}" was not ${entry ? "added" : "removed"}`, {
        fix: "Try again: other replicas were changing the agent's connections at the same time.",
      });
    });
    this.writing = write.catch(() => undefined);
    return write;
  }

  private requireProvider(): ConnectionProvider {
    if (!this.parts.provider) {
      throw new AssemblyLineError("AL_ERR_CONNECTIONS_UNAVAILABLE", "this runtime has no connections provider, so connections cannot be added", {
        fix: "Pass `connections: createConnections({...})` from @assemblyline-agents/connections in RuntimeOptions.",
      });
    }
    return this.parts.provider;
  }
}

/** How often a change of the stored connections is made again when other writers keep changing them under it. */
const STORE_WRITE_ATTEMPTS = 8;

function storedOf(value: JsonValue | null | undefined): Record<string, StoredConnection> {
  return value && typeof value === "object" && !Array.isArray(value) ? { ...(value as unknown as Record<string, StoredConnection>) } : {};
}

function alreadyExists(name: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_CONNECTION_REFUSED", `a connection named "${name}" already exists`, { fix: "Pick another name, or remove the existing connection first." });
}

/** A host connection may reach the hosts its own definition names (by name: a local server too), nothing else. */
function staticPolicy(definition: ConnectionDefinition): ConnectionPolicy {
  const urls = definition.kind === "mcp" ? [definition.url] : definition.kind === "openapi" ? [typeof definition.spec === "string" ? definition.spec : undefined, definition.baseUrl] : [definition.baseUrl];
  const hosts = urls.flatMap((url) => {
    if (!url) return [];
    try {
      return [new URL(url).hostname];
    } catch {
      return [];
    }
  });
  // An OpenAPI document given inline names its servers itself, variables at their defaults, as the provider fills them in; its requests go to baseUrl or those.
  if (definition.kind === "openapi" && typeof definition.spec === "object") {
    const servers = (definition.spec as { servers?: unknown }).servers;
    for (const server of Array.isArray(servers) ? (servers as Array<{ url?: unknown; variables?: Record<string, { default?: unknown }> }>) : []) {
      if (typeof server?.url !== "string") continue;
      const url = openApiServerUrl({ url: server.url, variables: server.variables });
      // A relative one resolves against baseUrl; one the calls go to that does not parse is refused when the provider checks the definition.
      if (URL.canParse(url)) hosts.push(new URL(url).hostname);
    }
  }
  return { allowedHosts: hosts, onlyAllowedHosts: true };
}

function checkSpec(spec: DynamicConnectionSpec, allowedHosts: readonly string[]): DynamicConnectionSpec {
  const fail = (problem: string, fix: string): never => {
    throw new AssemblyLineError("AL_ERR_CONNECTION_DEFINITION", problem, { fix });
  };
  if (typeof spec !== "object" || spec === null) fail("a connection must be an object", 'Pass { name, kind: "mcp", url } (or kind "openapi" with spec, kind "http" with baseUrl and endpoints).');
  if (typeof spec.name !== "string" || !NAME.test(spec.name) || spec.name.includes("__")) fail(`connection name ${JSON.stringify(spec.name)} is not snake_case`, "Use lowercase letters, digits and single underscores, e.g. weather_api.");
  const urls: Array<[string, unknown]> =
    spec.kind === "mcp" ? [["url", spec.url]] : spec.kind === "openapi" ? [["spec", spec.spec], ...(spec.baseUrl !== undefined ? ([["baseUrl", spec.baseUrl]] as Array<[string, unknown]>) : [])] : spec.kind === "http" ? [["baseUrl", spec.baseUrl]] : [];
  if (urls.length === 0) fail(`connection "${spec.name}": kind ${JSON.stringify((spec as { kind?: unknown }).kind)} is not mcp, openapi or http`, "Dynamic connections are remote services: mcp (url), openapi (spec URL) or http (baseUrl, endpoints).");
  for (const [field, value] of urls) {
    let url: URL | undefined;
    try {
      url = typeof value === "string" ? new URL(value) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) fail(`connection "${spec.name}": ${field} ${quotedUrl(value)} is not an http(s) URL`, "Pass an absolute http(s) URL.");
    // A spec is a tool input, stored in the settings facet and shown to the approver: a secret in its URL would be in all of them.
    if (url!.username || url!.password) fail(`connection "${spec.name}": ${field} carries credentials in the URL`, 'Take them out; the host stores the secret as a grant, listed in agent.ts dynamicConnections.grants, and the spec refers to it with auth: { grant: "<id>" }.');
    const credential = credentialInUrl(url!);
    if (credential) {
      fail(
        `connection "${spec.name}": ${field} carries a credential in its ${credential.in === "query" ? "query string" : "fragment"} (parameter ${JSON.stringify(credential.parameter)})`,
        `Take the parameter out of ${field}; the host stores the secret as a grant, listed in agent.ts dynamicConnections.grants, and the spec sends it with auth: { grant: "<id>", query: ${JSON.stringify(credential.parameter)} }.`,
      );
    }
    const host = url!.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    // "*.example.com" admits subdomains; only hosts listed by exact name may reach private addresses (the guard decides).
    if (!hostMatches(host, allowedHosts)) {
      throw new AssemblyLineError("AL_ERR_CONNECTION_REFUSED", `connection "${spec.name}": host ${host} is not in dynamicConnections.allowedHosts`, {
        fix: `List ${host} in agent.ts dynamicConnections.allowedHosts if the agent may connect to it.`,
      });
    }
  }
  if (spec.auth !== undefined && (typeof spec.auth !== "object" || spec.auth === null || typeof spec.auth.grant !== "string")) fail(`connection "${spec.name}": auth must be { grant: "<grant id>" }`, "Refer to a grant the host stored; never pass a secret.");
  // What a run asks for is stored and handed to the provider as it is: a field no spec has (`command`, `env`) must not ride along.
  const known = SPEC_KEYS[spec.kind];
  const unknown = Object.keys(spec).filter((key) => !known.includes(key));
  const unknownAuth = spec.auth ? Object.keys(spec.auth).filter((key) => key !== "grant" && key !== "header" && key !== "query") : [];
  if (unknown.length > 0 || unknownAuth.length > 0) {
    const fields = [...unknown, ...unknownAuth.map((key) => `auth.${key}`)];
    const local = unknown.some((key) => key === "command" || key === "args" || key === "env");
    fail(
      `connection "${spec.name}": ${fields.map((field) => JSON.stringify(field)).join(", ")} ${fields.length > 1 ? "are not fields" : "is not a field"} of a run's ${spec.kind} connection${local ? " (a run may only add remote services, never start a local command)" : ""}`,
      `Use only ${known.join(", ")}${spec.auth ? " (auth: grant, header or query)" : ""}.`,
    );
  }
  if (spec.auth?.header !== undefined && spec.auth.query !== undefined) {
    fail(`connection "${spec.name}": auth.header and auth.query are both set; the secret is sent one way`, 'Keep the one the service reads: auth: { grant, header: "x-api-key" } or auth: { grant, query: "api_key" }.');
  }
  return spec;
}

/** The hosts a run's connection names in its spec (an OpenAPI document's servers are checked as each request is sent). */
function specHosts(spec: DynamicConnectionSpec): string[] {
  const urls = spec.kind === "mcp" ? [spec.url] : spec.kind === "openapi" ? [spec.spec, spec.baseUrl] : [spec.baseUrl];
  return urls.flatMap((url) => {
    try {
      return typeof url === "string" ? [new URL(url).hostname] : [];
    } catch {
      return [];
    }
  });
}

/** The fields of each kind of DynamicConnectionSpec. */
const SPEC_KEYS: Record<DynamicConnectionSpec["kind"], readonly string[]> = {
  mcp: ["name", "kind", "url", "description", "auth"],
  openapi: ["name", "kind", "spec", "baseUrl", "description", "auth"],
  http: ["name", "kind", "baseUrl", "endpoints", "description", "auth"],
};

/**
 * Where a run's connection would send its calls, and the host's grant it would send them with, and
 * where that grant may go: what the approver decides on.
 */
function describeTarget(spec: DynamicConnectionSpec, grantHosts: readonly string[] | undefined): string {
  const target =
    spec.kind === "mcp"
      ? `the MCP server ${spec.url}`
      : spec.kind === "openapi"
        ? spec.baseUrl !== undefined
          ? `the OpenAPI service at ${spec.baseUrl} (document ${spec.spec})`
          : `the OpenAPI service its document ${spec.spec} names`
        : `the HTTP service ${spec.baseUrl}`;
  if (!spec.auth) return target;
  return `${target}, sending it the host's grant "${spec.auth.grant}" (only ever to ${(grantHosts ?? []).join(", ")}: a request to another host fails without it)`;
}

/** `work`, but no longer than `ms`: it goes on in the background. */
async function waitAtMost(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  try {
    await Promise.race([work, waited]);
  } finally {
    clearTimeout(timer);
  }
}

function errorText(error: unknown): string {
  return isAssemblyLineError(error) ? `${error.code}: ${error.message.split("\n")[0]}` : error instanceof Error ? error.message : String(error);
}
