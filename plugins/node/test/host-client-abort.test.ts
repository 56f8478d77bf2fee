import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("a client that sent its whole request and hung up before the host read it", () => {
  it("is logged at info as a client abort, not at error as an endpoint failure", async () => {
    // A slow state store (a busy database): the host is still checking the kill switch
    // when the hang-up arrives, and only then reads the body.
    const state = new InMemoryStateAdapter();
    const getSetting = state.getSetting.bind(state);
    state.getSetting = async (key) => {
      await new Promise((wait) => setTimeout(wait, 300));
      return getSetting(key);
    };
    const host = await startHost(bundle, { state });
    const { hostname, port } = new URL(host.url);
    const body = JSON.stringify({ message: "echo: hello" });
    const socket = connect(Number(port), hostname);
    await new Promise<void>((connected, reject) => socket.once("connect", connected).once("error", reject));
    await new Promise<void>((written) =>
      socket.end(`POST /message HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => written()),
    );
    socket.destroy();
    await waitFor(() => (host.logger.events("http.request").length > 0 ? true : undefined), 10_000, "the request to be logged");
    expect(host.logger.events("http.failed")).toEqual([]);
    expect(host.logger.events("http.client_aborted").map((entry) => entry.level)).toEqual(["info"]);
  });
});
