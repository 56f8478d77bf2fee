import type { ChannelAck, ChannelAttachment, ChannelDelivery, ChannelTurn, JsonValue } from "@assemblyline-agents/core";
import { DiscordRequestRefused } from "./signature.js";

/** Interaction types (Discord API v10). */
export const InteractionType = { Ping: 1, ApplicationCommand: 2, MessageComponent: 3, Autocomplete: 4, ModalSubmit: 5 } as const;
/** Interaction callback types used here. */
export const CallbackType = { Pong: 1, DeferredChannelMessageWithSource: 5, AutocompleteResult: 8 } as const;

const OptionType = { SubCommand: 1, SubCommandGroup: 2, String: 3, Attachment: 11 } as const;
const CommandType = { ChatInput: 1, User: 2, Message: 3 } as const;
/** Component types a modal submission carries (Discord API v10). */
const ComponentType = { TextInput: 4, FileUpload: 19 } as const;

interface DiscordUser {
  id: string;
  username?: string;
  global_name?: string | null;
}

interface CommandOption {
  name: string;
  type: number;
  value?: string | number | boolean;
  options?: CommandOption[];
}

/**
 * A component of a modal submission: an action row (`components`), a Label (type 18, its one `component`), or a
 * field in one: a text input (`value`), a select (`values`), a file upload (type 19, attachment ids in `values`).
 */
interface ModalComponent {
  type?: number;
  custom_id?: string;
  value?: unknown;
  values?: unknown;
  components?: ModalComponent[];
  component?: ModalComponent;
}

interface DiscordAttachment {
  id: string;
  url: string;
  filename?: string;
  content_type?: string;
  size?: number;
}

export interface DiscordInteraction {
  id: string;
  application_id: string;
  type: number;
  token: string;
  channel_id?: string;
  channel?: { id: string };
  guild_id?: string;
  member?: { user?: DiscordUser };
  user?: DiscordUser;
  data?: {
    id?: string;
    name?: string;
    type?: number;
    options?: CommandOption[];
    target_id?: string;
    resolved?: { attachments?: Record<string, DiscordAttachment>; messages?: Record<string, { content?: string; attachments?: DiscordAttachment[] }> };
    custom_id?: string;
    component_type?: number;
    values?: string[];
    components?: ModalComponent[];
  };
}

/** What delivery needs from the interaction: `interactionToken` is delivery-only, the rest is the run's channel metadata. */
export interface DiscordDeliveryMetadata {
  applicationId: string;
  interactionId: string;
  /** The interaction token authorizes the follow-up webhook (valid for 15 minutes): whoever holds it can post as the bot. */
  interactionToken: string;
  interactionType: number;
  channelId: string | null;
  guildId: string | null;
  /** Who asked: the bot mentions them when the reply goes out as a channel message. Absent on runs queued before it was kept. */
  userId?: string | null;
}

/** The response Discord gets once a turn is durably accepted: "thinking...", the reply follows. */
const DEFERRED_RESPONSE = { status: 200, body: { type: CallbackType.DeferredChannelMessageWithSource } };

/**
 * Turn a verified interaction into a ChannelTurn (or an ack for PING and
 * autocomplete). Slash commands, context-menu commands, message components and
 * modal submissions become turns keyed by the interaction id; the reply goes
 * through the follow-up webhook, so the turn asks the host to answer Discord
 * with a deferred response.
 */
export function normalizeInteraction(body: unknown): ChannelTurn | ChannelAck {
  const interaction = body as DiscordInteraction;
  if (typeof body !== "object" || body === null || typeof interaction.type !== "number") {
    throw invalid("the body is not a Discord interaction (no numeric type)");
  }
  if (interaction.type === InteractionType.Ping) return { ack: true, status: 200, body: { type: CallbackType.Pong } };
  if (interaction.type === InteractionType.Autocomplete) {
    // Suggestions would need an answer within 3 s from the agent; offer none rather than start a run per keystroke.
    return { ack: true, status: 200, body: { type: CallbackType.AutocompleteResult, data: { choices: [] } } };
  }
  for (const field of ["id", "application_id", "token"] as const) {
    if (typeof interaction[field] !== "string" || interaction[field] === "") throw invalid(`the interaction has no ${field}`);
  }
  const { message, attachments } = describe(interaction);
  const author = interaction.member?.user ?? interaction.user;
  const channelId = interaction.channel_id ?? interaction.channel?.id ?? null;
  const shown: Omit<DiscordDeliveryMetadata, "interactionToken"> = {
    applicationId: interaction.application_id,
    interactionId: interaction.id,
    interactionType: interaction.type,
    channelId,
    guildId: interaction.guild_id ?? null,
    userId: author?.id ?? null,
  };
  return {
    eventId: interaction.id,
    // One conversation per Discord channel (a DM is a channel too); without one, per user.
    conversationId: channelId ? `discord:${channelId}` : `discord:user:${author?.id ?? interaction.id}`,
    message,
    ...(author?.id ? { user: { id: author.id, ...(author.global_name || author.username ? { name: (author.global_name || author.username)! } : {}) } } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
    // The token lets anyone answer as the bot: deliver() gets it, the model (and its provider) never does.
    metadata: { discord: shown as unknown as JsonValue },
    deliveryMetadata: { discord: { interactionToken: interaction.token } },
    respond: DEFERRED_RESPONSE,
  };
}

function describe(interaction: DiscordInteraction): { message: string; attachments: ChannelAttachment[] } {
  const data = interaction.data ?? {};
  switch (interaction.type) {
    case InteractionType.ApplicationCommand:
      return describeCommand(data);
    case InteractionType.MessageComponent: {
      if (typeof data.custom_id !== "string") throw invalid("the component interaction has no data.custom_id");
      const values = Array.isArray(data.values) ? data.values.map(String) : [];
      return { message: values.length > 0 ? `${data.custom_id}: ${values.join(", ")}` : data.custom_id, attachments: [] };
    }
    case InteractionType.ModalSubmit:
      return describeModal(data);
    default:
      throw invalid(`interaction type ${interaction.type} is not one this channel handles`);
  }
}

function describeCommand(data: NonNullable<DiscordInteraction["data"]>): { message: string; attachments: ChannelAttachment[] } {
  if (typeof data.name !== "string") throw invalid("the command interaction has no data.name");
  const resolvedAttachments = data.resolved?.attachments ?? {};
  if (data.type === CommandType.Message) {
    const target = data.target_id ? data.resolved?.messages?.[data.target_id] : undefined;
    if (!target) throw invalid("the message command has no resolved target message");
    return { message: target.content ?? "", attachments: (target.attachments ?? []).map(toAttachment) };
  }
  if (data.type === CommandType.User) return { message: `/${data.name} <@${data.target_id ?? ""}>`, attachments: [] };
  // Chat input: walk sub-command groups down to the leaf options.
  const path = [data.name];
  let options = data.options ?? [];
  while (options.length === 1 && (options[0]!.type === OptionType.SubCommand || options[0]!.type === OptionType.SubCommandGroup)) {
    path.push(options[0]!.name);
    options = options[0]!.options ?? [];
  }
  const attachments = options
    .filter((option) => option.type === OptionType.Attachment && typeof option.value === "string")
    .map((option) => resolvedAttachments[option.value as string])
    .filter((attachment): attachment is DiscordAttachment => attachment !== undefined)
    .map(toAttachment);
  const values = options.filter((option) => option.type !== OptionType.Attachment && option.value !== undefined);
  // `/ask prompt: "..."`: the text is the message; anything richer reads as the command line.
  const message =
    path.length === 1 && values.length === 1 && values[0]!.type === OptionType.String
      ? String(values[0]!.value)
      : [`/${path.join(" ")}`, ...values.map((option) => `${option.name}: ${String(option.value)}`)].join(" ");
  return { message, attachments };
}

/**
 * A modal's fields, in order, in action rows or in Labels: a text input's text, a select's `custom_id: values` (as
 * a message component reads), one per line; the files of a file upload, from the resolved attachments, become the
 * turn's attachments.
 */
function describeModal(data: NonNullable<DiscordInteraction["data"]>): { message: string; attachments: ChannelAttachment[] } {
  const resolvedAttachments = data.resolved?.attachments ?? {};
  const lines: string[] = [];
  const attachments: ChannelAttachment[] = [];
  const fields = (Array.isArray(data.components) ? data.components : []).flatMap((outer) =>
    Array.isArray(outer?.components) ? outer.components : outer?.component && typeof outer.component === "object" ? [outer.component] : [],
  );
  for (const field of fields) {
    if (typeof field !== "object" || field === null) continue;
    const values = Array.isArray(field.values) ? field.values.map(String) : [];
    if (field.type === ComponentType.FileUpload) {
      for (const id of values) {
        const attachment = resolvedAttachments[id];
        if (attachment) attachments.push(toAttachment(attachment));
      }
    } else if (typeof field.value === "string" && (field.type === undefined || field.type === ComponentType.TextInput)) {
      lines.push(field.value);
    } else if (values.length > 0 && typeof field.custom_id === "string") {
      lines.push(`${field.custom_id}: ${values.join(", ")}`);
    }
  }
  return { message: lines.join("\n"), attachments };
}

function toAttachment(attachment: DiscordAttachment): ChannelAttachment {
  return {
    id: attachment.id,
    url: attachment.url,
    ...(attachment.filename ? { filename: attachment.filename } : {}),
    ...(attachment.content_type ? { contentType: attachment.content_type } : {}),
    ...(typeof attachment.size === "number" ? { size: attachment.size } : {}),
  };
}

function invalid(why: string): DiscordRequestRefused {
  return new DiscordRequestRefused(400, `not a usable interaction: ${why}`, "Send Discord interaction payloads (API v10) to this route.");
}

/**
 * Read the delivery metadata back from what deliver() got: the channel metadata, and the token from the delivery
 * metadata (a run queued before the token moved there has it in the channel metadata's `discord.interactionToken`).
 * Undefined when absent or malformed.
 */
export function deliveryMetadata(delivery: Pick<ChannelDelivery, "metadata" | "deliveryMetadata">): DiscordDeliveryMetadata | undefined {
  const discord = delivery.metadata?.discord as Partial<DiscordDeliveryMetadata> | undefined;
  const secret = (delivery.deliveryMetadata?.discord as { interactionToken?: unknown } | undefined)?.interactionToken;
  const interactionToken = secret ?? discord?.interactionToken;
  if (!discord || typeof discord.applicationId !== "string" || typeof interactionToken !== "string") return undefined;
  return { ...(discord as DiscordDeliveryMetadata), interactionToken };
}
