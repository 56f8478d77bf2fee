import { createHash } from "node:crypto";
import {
  AssemblyLineError,
  DEFAULT_BLOB_CONTENT_TYPE,
  cleanBlobContentType,
  createGuardedFetch,
  isAssemblyLineError,
  type BlobStore,
  type ChannelAttachment,
  type ChannelAttachmentDownload,
  type ChannelModule,
  type FileIndexStore,
  type FileRecord,
  type JsonValue,
  type OutboundPolicy,
  type RunRecord,
  type RunStore,
  type RuntimeLogger,
} from "@assemblyline-agents/core";

export interface AttachmentOptions {
  /** Largest attachment stored; larger ones fail with AL_ERR_ATTACHMENT_TOO_LARGE. Default 25 MiB. */
  maxBytes?: number;
  /**
   * Hosts downloads may reach (exact, or "*.example.com" for subdomains), checked
   * on every redirect too. Default: any public host the channel's resolveAttachment
   * (or the attachment URL) names. Loopback, private and link-local addresses
   * (cloud metadata endpoints among them) are refused unless a host resolving
   * to them is listed here by exact name.
   */
  allowedHosts?: string[];
  /**
   * Per download, and per call of the channel's resolveAttachment (one that has not answered by then
   * is given up: its `ctx.signal` aborts and the attachment fails). Default 30 000 ms.
   */
  timeoutMs?: number;
}

const DEFAULT_MAX_BYTES = 25 * 1024 * 1024;

/** Where one attachment's bytes come from (a channel's resolveAttachment, or its plain URL). */
interface DownloadRequest {
  url: string;
  headers: Record<string, string>;
  filename?: string;
  /** The only hosts the channel lets this download reach, redirects included. */
  withinHosts?: string[];
}

/** Guarded fetches kept per channel host list (each holds its own connection pool); the oldest goes past this. */
const MAX_NARROWED_FETCHES = 32;

/**
 * Downloads a turn's attachments before its run starts, through the module of
 * the channel that produced the turn and no other (so one channel's credentials
 * never reach another's URLs), under a size cap and a host allowlist. The bytes
 * go to the BlobStore and a FileRecord under /files/attachments/<runId>/, and
 * each outcome is recorded on the run (`attachment.stored` / `attachment.failed`).
 */
export class AttachmentIngest {
  private readonly maxBytes: number;
  private readonly timeoutMs: number;
  private readonly allowedHosts: string[] | undefined;
  private readonly fetch: typeof fetch;
  private readonly narrowed = new Map<string, typeof fetch>();

  constructor(
    private readonly parts: {
      channels: Record<string, ChannelModule>;
      blob: BlobStore | undefined;
      files: FileIndexStore;
      runs: RunStore;
      logger: RuntimeLogger;
    },
    options: AttachmentOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.allowedHosts = options.allowedHosts?.map((host) => host.toLowerCase());
    this.fetch = createGuardedFetch(this.policy());
  }

  private policy(withinHosts?: string[]): OutboundPolicy {
    return { allowedHosts: this.allowedHosts, onlyAllowedHosts: this.allowedHosts !== undefined, maxRedirects: 3, ...(withinHosts ? { withinHosts } : {}) };
  }

  /** The host's guarded fetch, narrowed to the hosts a channel lets one download reach (checked on every hop). */
  private fetchFor(withinHosts: string[] | undefined): typeof fetch {
    if (withinHosts === undefined) return this.fetch;
    const key = JSON.stringify([...withinHosts].sort());
    let narrowed = this.narrowed.get(key);
    if (!narrowed) {
      narrowed = createGuardedFetch(this.policy(withinHosts));
      if (this.narrowed.size >= MAX_NARROWED_FETCHES) this.narrowed.delete(this.narrowed.keys().next().value!);
      this.narrowed.set(key, narrowed);
    }
    return narrowed;
  }

  /** Store every attachment of a queued run that is not stored yet. */
  async ingestRun(runId: string): Promise<void> {
    const run = await this.parts.runs.getRun(runId);
    const attachments = attachmentsOf(run);
    if (!run || attachments.length === 0) return;
    if (!this.parts.blob) {
      this.parts.logger.warn({ event: "attachment.skipped", runId, count: attachments.length }, "the host has no blob store; attachments are not downloaded");
      return;
    }
    const channel = run.input.channel!.name;
    for (const attachment of attachments) {
      try {
        const request = await this.resolve(attachment, channel, run.conversationId ?? "");
        // The channel's filename (a provider's file id often comes without one) names the stored file.
        const path = `/files/attachments/${runId}/${safeName(attachment.id, request.filename ?? attachment.filename)}`;
        if (await this.parts.files.getFileRecord(path)) continue;
        const record = await this.store(attachment, request, { runId, path });
        await this.parts.runs.appendEvents(runId, [{ type: "attachment.stored", data: { attachmentId: attachment.id, path, size: record.size, contentType: record.contentType, sha256: record.sha256 } }]);
      } catch (error) {
        const code = error instanceof AssemblyLineError ? error.code : "AL_ERR_ATTACHMENT_DOWNLOAD";
        const message = error instanceof Error ? error.message : String(error);
        this.parts.logger.warn({ event: "attachment.failed", runId, attachmentId: attachment.id, code, err: message }, "attachment not stored; the run goes on without it");
        await this.parts.runs.appendEvents(runId, [{ type: "attachment.failed", data: { attachmentId: attachment.id, code, error: message } }]);
      }
    }
  }

  /** The download request for one attachment, from the module of the channel that produced it and no other. */
  private async resolve(attachment: ChannelAttachment, channel: string, conversationId: string): Promise<DownloadRequest> {
    const module = this.parts.channels[channel];
    const resolved = module?.resolveAttachment ? await this.resolveInTime(module, attachment, channel, conversationId) : undefined;
    const url = resolved?.url ?? attachment.url;
    if (!url) {
      throw new AssemblyLineError("AL_ERR_ATTACHMENT_REFUSED", `attachment ${attachment.id} has no url and channel ${channel} resolved none`, {
        fix: "Give the attachment a url, or export resolveAttachment from the channel module.",
      });
    }
    const withinHosts = resolved?.allowedHosts;
    // Fail closed: a list the guard cannot read must not turn into no restriction.
    if (withinHosts !== undefined && (!Array.isArray(withinHosts) || withinHosts.some((host) => typeof host !== "string" || host.trim() === ""))) {
      throw new AssemblyLineError("AL_ERR_ATTACHMENT_REFUSED", `attachment ${attachment.id}: channel ${channel}'s resolveAttachment returned allowedHosts ${JSON.stringify(withinHosts)}, not a list of host names`, {
        fix: 'Return allowedHosts as host names, e.g. ["cdn.example.com", "*.example.com"], or leave it out.',
      });
    }
    return {
      url,
      headers: resolved?.headers ?? {},
      ...(typeof resolved?.filename === "string" && resolved.filename !== "" ? { filename: resolved.filename } : {}),
      ...(withinHosts ? { withinHosts: withinHosts.map((host) => host.toLowerCase()) } : {}),
    };
  }

  /**
   * The channel's resolveAttachment, given up after timeoutMs: the run waits for it before it starts, so
   * one that never answers would hold the run queued, its conversation and a run slot with it, for good.
   */
  private async resolveInTime(module: ChannelModule, attachment: ChannelAttachment, channel: string, conversationId: string): Promise<ChannelAttachmentDownload | undefined> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new AssemblyLineError("AL_ERR_ATTACHMENT_DOWNLOAD", `attachment ${attachment.id}: channel ${channel}'s resolveAttachment did not answer within ${this.timeoutMs} ms`, {
          fix: "Make resolveAttachment answer or throw sooner (stop when ctx.signal aborts), or raise listenNodeRuntime({ attachments: { timeoutMs } }) if the provider is that slow.",
          details: { reason: "resolve_timeout", timeoutMs: this.timeoutMs },
        });
        controller.abort(error);
        reject(error);
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([module.resolveAttachment!(attachment, { conversationId, signal: controller.signal }), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Download one attachment as `request` says and store it at `path`. */
  private async store(attachment: ChannelAttachment, request: DownloadRequest, ctx: { runId: string | null; path: string }): Promise<FileRecord> {
    const { body, contentType } = await this.download(request, attachment.id);
    const blobKey = ctx.path.replace(/^\/files\//, "");
    // A channel's or server's type a blob store would refuse (a non-ASCII file name in a parameter,
    // a line break) is cleaned to its media type or dropped: the attachment must not be lost to it.
    const type = cleanBlobContentType(attachment.contentType) ?? cleanBlobContentType(contentType) ?? DEFAULT_BLOB_CONTENT_TYPE;
    await this.parts.blob!.put(blobKey, body, { contentType: type });
    const record: FileRecord = {
      path: ctx.path,
      blobKey,
      size: body.byteLength,
      contentType: type,
      sha256: createHash("sha256").update(body).digest("hex"),
      runId: ctx.runId,
      createdAt: new Date().toISOString(),
    };
    await this.parts.files.putFileRecord(record);
    return record;
  }

  private async download(request: DownloadRequest, id: string): Promise<{ body: Uint8Array; contentType: string | undefined }> {
    const url = this.checkUrl(request.url, id);
    let response: Response;
    try {
      // The guard checks each hop's host (the channel's hosts too) and the address it really connects to,
      // and drops the channel's headers on a hop to another origin.
      response = await this.fetchFor(request.withinHosts)(url, { headers: request.headers, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (error) {
      throw attachmentError(error, id, url);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new AssemblyLineError("AL_ERR_ATTACHMENT_DOWNLOAD", `attachment ${id}: ${url.origin}${url.pathname} answered ${response.status}`, {
        fix: "Check the credentials and URL the channel's resolveAttachment returns.",
      });
    }
    const declared = Number(response.headers.get("content-length"));
    if (Number.isFinite(declared) && declared > this.maxBytes) {
      await response.body?.cancel();
      throw this.tooLarge(id, declared);
    }
    return { body: await this.readCapped(response, id), contentType: response.headers.get("content-type") ?? undefined };
  }

  private async readCapped(response: Response, id: string): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (!response.body) return new Uint8Array(0);
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > this.maxBytes) {
        await reader.cancel();
        throw this.tooLarge(id, size);
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks);
  }

  private tooLarge(id: string, size: number): AssemblyLineError {
    return new AssemblyLineError("AL_ERR_ATTACHMENT_TOO_LARGE", `attachment ${id} is at least ${size} bytes, over the ${this.maxBytes}-byte cap`, {
      fix: "Raise listenNodeRuntime({ attachments: { maxBytes } }) if such files are expected.",
    });
  }

  private checkUrl(text: string, id: string): URL {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new AssemblyLineError("AL_ERR_ATTACHMENT_REFUSED", `attachment ${id}: ${JSON.stringify(text)} is not a URL`, { fix: "Resolve the attachment to an absolute http(s) URL." });
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new AssemblyLineError("AL_ERR_ATTACHMENT_REFUSED", `attachment ${id}: ${url.protocol} URLs are not downloaded`, { fix: "Resolve the attachment to an http(s) URL." });
    }
    return url;
  }
}

/** Guard refusals become the attachment's own codes, with the guard's reason kept in the message and details. */
function attachmentError(error: unknown, id: string, url: URL): AssemblyLineError {
  if (isAssemblyLineError(error) && error.code.startsWith("AL_ERR_OUTBOUND_")) {
    const code = error.code === "AL_ERR_OUTBOUND_REDIRECT" ? "AL_ERR_ATTACHMENT_DOWNLOAD" : "AL_ERR_ATTACHMENT_REFUSED";
    const channelHosts = error.details?.list === "withinHosts";
    const fix =
      code === "AL_ERR_ATTACHMENT_DOWNLOAD"
        ? "Resolve the attachment to its final URL."
        : channelHosts
          ? "The channel's resolveAttachment limits this download to its allowedHosts: list the host there (for a provider helper, in its options) if the provider really serves files from it."
          : `List the host by exact name in listenNodeRuntime({ attachments: { allowedHosts } }) if the channel really downloads from an internal host.`;
    return new AssemblyLineError(code, `attachment ${id}: ${error.message.split("\n")[0]}`, {
      fix,
      details: { reason: error.code, ...error.details },
    });
  }
  if (isAssemblyLineError(error)) return error;
  return new AssemblyLineError("AL_ERR_ATTACHMENT_DOWNLOAD", `attachment ${id}: fetching ${url.origin}${url.pathname} failed: ${(error as Error).message}`, {
    fix: "Check the URL the channel's resolveAttachment returns and that its host is reachable.",
  });
}

function attachmentsOf(run: RunRecord | undefined): ChannelAttachment[] {
  const list = run?.input.channel?.metadata?.attachments;
  if (!Array.isArray(list)) return [];
  return list.filter((item): item is JsonValue & ChannelAttachment => typeof item === "object" && item !== null && !Array.isArray(item) && typeof (item as { id?: unknown }).id === "string");
}

/**
 * Where an attachment is stored under its run's folder: a folder per attachment id, holding the
 * file under its (cleaned) name. Provider ids and names can hold anything: an id that cleaning
 * would change (or cut) gets a digest of itself, after a `~` cleaning never writes, so two ids
 * never share a folder (`msg1:file` and `msg1/file`), and a folder never shares a name with a file.
 */
function safeName(attachmentId: string, filename: string | undefined): string {
  const clean = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_");
  const kept = clean(attachmentId);
  const folder = kept === attachmentId && kept.length > 0 && kept.length <= 100 ? kept : `${kept.slice(0, 40)}~${createHash("sha256").update(attachmentId).digest("hex").slice(0, 16)}`;
  return `${folder}/${(filename ? clean(filename).slice(0, 100) : "") || "attachment"}`;
}
