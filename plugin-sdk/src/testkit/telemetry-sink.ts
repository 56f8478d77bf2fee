import { describe, expect, it } from "vitest";
import type { SpanAttributeValue, TelemetrySink, TelemetrySpan } from "../instrumentation.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

/** A span as the sink's backend received it, read back by the plugin's own test. */
export interface DeliveredSpan {
  traceId: string;
  spanId: string;
  /** Empty or absent for a root span. */
  parentSpanId?: string;
  name: string;
  startTimeMs: number;
  endTimeMs: number;
  status: "unset" | "ok" | "error";
  attributes: Record<string, SpanAttributeValue>;
  resource: Record<string, string>;
}

export interface TelemetrySinkSubject {
  sink: TelemetrySink;
  /** Everything the backend has received so far, in arrival order. */
  delivered(): Promise<DeliveredSpan[]>;
}

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const ROOT = "00f067aa0ba902b7";
const T0 = 1_764_000_000_000;

function span(index: number, extra: Partial<TelemetrySpan> = {}): TelemetrySpan {
  return {
    traceId: TRACE,
    spanId: (index + 1).toString(16).padStart(16, "0"),
    parentSpanId: ROOT,
    name: `execute_tool tool_${index}`,
    kind: "internal",
    startTimeMs: T0 + index,
    endTimeMs: T0 + index + 25,
    status: { code: "ok" },
    attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": `tool_${index}`, "gen_ai.tool.call.id": `call_${index}` },
    resource: { "service.name": "conformance" },
    ...extra,
  };
}

/**
 * The TelemetrySink contract: every exported span reaches the backend once,
 * after flush() at the latest, with its ids, parent, name, times, status,
 * attribute types and resource intact; export() never blocks on the network,
 * never mutates the span, and the sink keeps working after a flush.
 */
export function describeTelemetrySinkConformance(name: string, factory: StateKitFactory<TelemetrySinkSubject>): void {
  describe(`${name}: TelemetrySink conformance`, () => {
    const subject = useSubject(factory);
    const flush = () => subject().sink.flush?.();

    it("delivers a span with its ids, name, times, status, attribute types and resource", async () => {
      const exported = span(0, {
        kind: "client",
        status: { code: "error", message: "rate limited" },
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.request.model": "gpt-5.4-mini",
          "gen_ai.usage.input_tokens": 1234,
          "assembly_line.usage.cost_usd": 0.0125,
          "assembly_line.tool.approved": true,
          "gen_ai.response.finish_reasons": ["stop", "length"],
        },
      });
      const copy = structuredClone(exported);
      await subject().sink.export(exported);
      expect(exported).toEqual(copy);
      await flush();
      const [got, ...rest] = await subject().delivered();
      expect(rest).toEqual([]);
      expect(got).toMatchObject({ traceId: TRACE, spanId: exported.spanId, parentSpanId: ROOT, name: exported.name, startTimeMs: T0, endTimeMs: T0 + 25, status: "error" });
      expect(got!.attributes).toEqual(exported.attributes);
      expect(got!.resource).toMatchObject({ "service.name": "conformance" });
    });

    it("keeps a root span a root and children under it", async () => {
      const root = span(0, { spanId: ROOT, name: "invoke_agent conformance", attributes: { "gen_ai.operation.name": "invoke_agent" } });
      delete root.parentSpanId;
      await subject().sink.export(span(1));
      await subject().sink.export(root);
      await flush();
      const delivered = await subject().delivered();
      expect(delivered.find((item) => item.spanId === ROOT)?.parentSpanId || undefined).toBeUndefined();
      expect(delivered.find((item) => item.spanId === span(1).spanId)?.parentSpanId).toBe(ROOT);
    });

    it("delivers each of many spans exactly once", async () => {
      const count = 1_500;
      for (let index = 0; index < count; index += 1) await subject().sink.export(span(index));
      await flush();
      const ids = (await subject().delivered()).map((item) => item.spanId);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
    });

    it("flushes with nothing queued, and keeps exporting after a flush", async () => {
      await flush();
      await subject().sink.export(span(7));
      await flush();
      await flush();
      await subject().sink.export(span(8));
      await flush();
      expect((await subject().delivered()).map((item) => item.name)).toEqual(["execute_tool tool_7", "execute_tool tool_8"]);
    });

    it("accepts a span with no attributes", async () => {
      await subject().sink.export(span(3, { attributes: {} }));
      await flush();
      const [got] = await subject().delivered();
      expect(got?.attributes).toEqual({});
    });
  });
}
