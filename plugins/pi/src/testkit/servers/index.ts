export * from "./scripted-server.js";
export { OpenAIChatProtocol, startOpenAIChatServer } from "./openai-chat-server.js";
export { AnthropicMessagesProtocol, startAnthropicMessagesServer } from "./anthropic-messages-server.js";
