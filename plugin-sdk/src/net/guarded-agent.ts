import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction, type Socket } from "node:net";
import { Agent, buildConnector } from "undici";
import { AssemblyLineError } from "../errors.js";
import { classifyAddress } from "./address-class.js";
import { normaliseHost, type OutboundHostRules, type OutboundResolver } from "./outbound-policy.js";

/**
 * An undici Agent whose every connection is checked on the address the socket
 * really connects to: names resolve once, inside the connect path (no second
 * lookup for a rebinding server to answer differently), IP literals are checked
 * before dialing, and the connected peer is checked again. A lookup that fails
 * or answers nothing fails the connection.
 */
export function createGuardedAgent(rules: OutboundHostRules, resolve: OutboundResolver = systemResolve): Agent {
  const connectChecked = buildConnector({ lookup: guardedLookup(rules, resolve) } as buildConnector.BuildOptions);
  return new Agent({
    connect(options, callback) {
      const host = normaliseHost(options.hostname);
      if (isIP(host)) {
        const refusal = refuseAddress(rules, host, host);
        if (refusal) return callback(refusal, null);
      }
      connectChecked(options, (error, socket) => {
        if (error || !socket) return callback(error ?? new Error("no socket"), null);
        const peer = (socket as Socket).remoteAddress;
        const refusal = peer ? refuseAddress(rules, host, peer) : undefined;
        if (refusal) {
          socket.destroy();
          return callback(refusal, null);
        }
        callback(null, socket);
      });
    },
  });
}

/** The refusal for `address` reached through `hostname`, or undefined when the policy allows it. */
export function refuseAddress(rules: OutboundHostRules, hostname: string, address: string): AssemblyLineError | undefined {
  if (rules.mayReachSpecial(hostname)) return undefined;
  const found = classifyAddress(address);
  if (found.public) return undefined;
  const range = found.embedded ? `${found.range} (${found.embedded.address}, ${found.embedded.range})` : found.range;
  return new AssemblyLineError("AL_ERR_OUTBOUND_ADDRESS_REFUSED", `host ${hostname} is ${hostname === found.address ? "" : `resolved to ${found.address}, `}a ${range} address, which outbound requests may not reach`, {
    fix: `List ${hostname} in the policy's allowedHosts if it really is an internal service the runtime should reach.`,
    details: { hostname, address: found.address, range: found.range },
  });
}

function guardedLookup(rules: OutboundHostRules, resolve: OutboundResolver): LookupFunction {
  return (hostname, options, callback) => {
    const answer = (error: NodeJS.ErrnoException | null, addresses: readonly LookupAddress[] = []) => {
      if (options.all) (callback as unknown as (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void)(error, [...addresses]);
      else callback(error, addresses[0]?.address ?? "", addresses[0]?.family);
    };
    resolve(hostname, { family: typeof options.family === "number" ? options.family : undefined, hints: options.hints }).then(
      (addresses) => {
        if (addresses.length === 0) {
          return answer(new AssemblyLineError("AL_ERR_OUTBOUND_ADDRESS_REFUSED", `host ${hostname} resolved to no address`, { fix: "Check the host name." }) as NodeJS.ErrnoException);
        }
        // Any special address among the answers refuses the host: the socket may pick any of them.
        for (const { address } of addresses) {
          const refusal = refuseAddress(rules, hostname, address);
          if (refusal) return answer(refusal as NodeJS.ErrnoException);
        }
        answer(null, addresses);
      },
      (error: NodeJS.ErrnoException) => answer(error),
    );
  };
}

function systemResolve(hostname: string, options: { family?: number; hints?: number }): Promise<readonly LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0, ...(options.hints ? { hints: options.hints } : {}) }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}
