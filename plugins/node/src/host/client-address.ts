import type { IncomingMessage } from "node:http";
import proxyAddr from "proxy-addr";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** The address a request came from, as the host judges it (rate-limit keys, security logs). */
export type ClientAddressOf = (req: IncomingMessage) => string | undefined;

/**
 * `trustProxy`: the addresses, CIDR ranges or proxy-addr names (`loopback`, `linklocal`,
 * `uniquelocal`) of the reverse proxies in front of the host. Their X-Forwarded-For is believed,
 * hop by hop from the socket's address: the client is the nearest address that is not a trusted
 * proxy. Without it (the default), or for a request whose socket address is not trusted, the
 * client is the socket's address, whatever the headers say.
 */
export function clientAddressOf(trustProxy: readonly string[] | undefined, source: string): ClientAddressOf {
  if (trustProxy === undefined || trustProxy.length === 0) return (req) => req.socket.remoteAddress;
  let trusted: ReturnType<typeof proxyAddr.compile>;
  try {
    trusted = proxyAddr.compile([...trustProxy]);
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `${source} is not a list of proxy addresses: ${(error as Error).message}`, {
      fix: "List IP addresses or CIDR ranges (10.0.0.0/8, ::1), or loopback, linklocal, uniquelocal; e.g. ASSEMBLY_LINE_TRUST_PROXY=loopback,10.0.0.0/8.",
    });
  }
  return (req) => (req.socket.remoteAddress === undefined ? undefined : proxyAddr(req, trusted));
}

/** `trustProxy` from the option, else from ASSEMBLY_LINE_TRUST_PROXY (comma-separated), with the name it was set by. */
export function trustProxySetting(option: unknown, env: Record<string, string | undefined>): { list: string[]; source: string } | undefined {
  if (option !== undefined) {
    const list = typeof option === "string" ? [option] : option;
    if (!Array.isArray(list) || !list.every((entry) => typeof entry === "string" && entry.trim() !== "")) {
      throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `trustProxy=${JSON.stringify(option)} is not an address or a list of them`, {
        fix: 'Set trustProxy to the proxies\' addresses or ranges, e.g. ["loopback", "10.0.0.0/8"], or leave it out.',
      });
    }
    return { list: list.map((entry) => entry.trim()), source: "trustProxy" };
  }
  const raw = env.ASSEMBLY_LINE_TRUST_PROXY;
  if (raw === undefined || raw.trim() === "") return undefined;
  return { list: raw.split(",").map((entry) => entry.trim()).filter((entry) => entry !== ""), source: "ASSEMBLY_LINE_TRUST_PROXY" };
}
