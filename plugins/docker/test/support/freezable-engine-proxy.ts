import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A socket in front of the real Docker engine that can be frozen: from then on
 * nothing passes in either direction and new connections are accepted but never
 * answered, as with a dockerd that is stuck. The engine itself is never touched.
 */
export interface FreezableEngineProxy {
  socketPath: string;
  /** Freeze as soon as the engine sends `text` (say, a line a command prints once it runs). */
  freezeWhenEngineSends(text: string): void;
  /** Freeze when a request holding `text` (say, a path of the engine's API) comes, before the engine sees it. */
  freezeWhenClientSends(text: string): void;
  close(): Promise<void>;
}

export async function startFreezableEngineProxy(engineSocketPath = "/var/run/docker.sock"): Promise<FreezableEngineProxy> {
  const folder = mkdtempSync(join(tmpdir(), "al-engine-proxy-"));
  const socketPath = join(folder, "docker.sock");
  const sockets = new Set<Socket>();
  let frozen = false;
  let trigger: string | undefined;
  let requestTrigger: string | undefined;
  /** Bumped when a request trigger is set: what a connection sent before it is not looked at again. */
  let requestTriggerSet = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    if (frozen) {
      client.resume();
      return;
    }
    const engine = createConnection(engineSocketPath);
    track(engine);
    // A trigger split across two chunks is still seen.
    let recent = "";
    let sent = "";
    let sentSince = requestTriggerSet;
    client.on("data", (bytes) => {
      if (frozen) return;
      if (sentSince !== requestTriggerSet) [sent, sentSince] = ["", requestTriggerSet];
      sent = (sent + bytes.toString("latin1")).slice(-4096);
      if (requestTrigger !== undefined && sent.includes(requestTrigger)) {
        frozen = true;
        return;
      }
      engine.write(bytes);
    });
    engine.on("data", (bytes) => {
      if (frozen) return;
      client.write(bytes);
      recent = (recent + bytes.toString("latin1")).slice(-4096);
      if (trigger !== undefined && recent.includes(trigger)) frozen = true;
    });
    client.on("close", () => engine.destroy());
    engine.on("close", () => {
      if (!frozen) client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    freezeWhenEngineSends(text) {
      trigger = text;
    },
    freezeWhenClientSends(text) {
      requestTrigger = text;
      requestTriggerSet += 1;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
