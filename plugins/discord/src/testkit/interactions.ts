import type { DiscordInteraction } from "../interaction.js";

let counter = 0;
/** A snowflake-shaped id, unique in this process, made at `at` (epoch ms, default now) as Discord's ids hold their time. */
export function snowflake(at = Date.now()): string {
  counter += 1;
  return String(BigInt(at - 1420070400000) * 4194304n + BigInt(process.pid % 1024) * 4096n + BigInt(counter % 4096));
}

/** A slash command interaction (`/ask prompt: <text>`) as Discord sends it, optionally with an attachment option. */
export function slashCommandInteraction(options: {
  id?: string;
  applicationId?: string;
  token?: string;
  channelId: string;
  text: string;
  command?: string;
  attachment?: { id: string; filename: string; url: string; contentType?: string; size?: number };
  user?: { id: string; username: string };
}): DiscordInteraction & { version: 1 } {
  const user = options.user ?? { id: "80351110224678912", username: "nelly" };
  return {
    id: options.id ?? snowflake(),
    application_id: options.applicationId ?? "1000000000000000001",
    type: 2,
    token: options.token ?? `aW50ZXJhY3Rpb24${snowflake()}`,
    version: 1,
    channel_id: options.channelId,
    channel: { id: options.channelId },
    guild_id: "290926798626357999",
    member: { user },
    data: {
      id: "771825006014889984",
      name: options.command ?? "ask",
      type: 1,
      options: [
        { name: "prompt", type: 3, value: options.text },
        ...(options.attachment ? [{ name: "file", type: 11, value: options.attachment.id }] : []),
      ],
      ...(options.attachment
        ? {
            resolved: {
              attachments: {
                [options.attachment.id]: {
                  id: options.attachment.id,
                  filename: options.attachment.filename,
                  url: options.attachment.url,
                  ...(options.attachment.contentType ? { content_type: options.attachment.contentType } : {}),
                  size: options.attachment.size ?? 0,
                },
              },
            },
          }
        : {}),
    },
  };
}
