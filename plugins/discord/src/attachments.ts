import { AssemblyLineError, type ChannelAttachment, type ChannelAttachmentDownload } from "@assemblyline-agents/core";
import type { ResolvedDiscordOptions } from "./options.js";

/**
 * Discord serves attachments from its CDN at signed URLs that need no
 * credentials. A turn's attachment must point there (exact host match against
 * `attachmentHosts`, which holds host names only: checkOptions refuses a "*."
 * pattern, so the list means the same here as it does to the host), and the
 * download carries the same list as its `allowedHosts`, which the host applies
 * to every redirect: a CDN answer redirecting elsewhere is refused, not followed.
 */
export function resolveDiscordAttachment(attachment: ChannelAttachment, options: ResolvedDiscordOptions): ChannelAttachmentDownload {
  let url: URL;
  try {
    url = new URL(attachment.url ?? "");
  } catch {
    throw new AssemblyLineError("AL_ERR_DISCORD_ATTACHMENT", `attachment ${attachment.id} has no valid url`, { fix: "Attachments come from the interaction's resolved data." });
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || !options.attachmentHosts.includes(url.hostname.toLowerCase())) {
    throw new AssemblyLineError("AL_ERR_DISCORD_ATTACHMENT", `attachment ${attachment.id} is not on Discord's CDN (${url.protocol}//${url.hostname})`, {
      fix: `Only ${options.attachmentHosts.join(", ")} are downloaded; list another host in defineDiscordChannel({ attachmentHosts }).`,
    });
  }
  return { url: url.toString(), allowedHosts: [...options.attachmentHosts], ...(attachment.filename ? { filename: attachment.filename } : {}) };
}
