// The served OpenAPI document is kept true: every route of the router is in it and nothing
// else is, each operation documents its parameters, and real responses of the JSON routes
// parse with the schemas the document was generated from.
import { describe, expect, it } from "vitest";
import { useDevGateway } from "./support/gateway-harness.ts";
import { userMessage } from "@agentrt/testing";
import { enc, http } from "./support/http.ts";

const fx = useDevGateway();

describe("OpenAPI document", () => {
  it("lists exactly the router's routes, by method and path", async () => {
    const res = await http(fx.gw.url, "GET", "/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    const documented = Object.entries(res.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const routed = fx.gw.gateway.routes.map((r) => `${r.method} ${r.path}`);
    expect(documented.sort()).toEqual(routed.sort());
    expect(new Set(routed).size).toBe(routed.length);
  });

  it("documents every path parameter, and bodies for the routes that take one", async () => {
    const doc = (await http(fx.gw.url, "GET", "/v1/openapi.json")).body;
    for (const route of fx.gw.gateway.routes) {
      const op = doc.paths[route.path][route.method.toLowerCase()];
      expect(op.operationId).toBe(route.name);
      const templated = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const inPath = op.parameters.filter((p: { in: string }) => p.in === "path").map((p: { name: string }) => p.name);
      expect(inPath.sort()).toEqual(templated.sort());
      expect(op.requestBody !== undefined).toBe(route.body !== undefined);
    }
    const append = doc.paths["/v1/streams/{streamPath}/events"].post;
    expect(append.requestBody.content["application/json"].schema.required).toContain("events");
  });

  it("real responses parse with the documented response schemas", async () => {
    const path = "/agents/openapi/one";
    const bodies: Record<string, unknown> = {};
    bodies.appendEvents = (await http(fx.gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [{ type: "agent/created", payload: {} }, userMessage("hi")] } })).body;
    bodies.readEvents = (await http(fx.gw.url, "GET", `/v1/streams/${enc(path)}/events`)).body;
    bodies.getAgentState = (await http(fx.gw.url, "GET", `/v1/agents/${enc(path)}/state`)).body;
    bodies.listAgents = (await http(fx.gw.url, "GET", "/v1/agents")).body;
    for (const [name, body] of Object.entries(bodies)) {
      const route = fx.gw.gateway.routes.find((r) => r.name === name);
      if (route?.kind !== "json" || route.response === undefined) throw new Error(`${name} is not a JSON route with a response schema`);
      const parsed = route.response.safeParse(body);
      expect(parsed.success, `${name}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
    const error = (await http(fx.gw.url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=-1`)).body;
    expect(Object.keys(error.error).sort()).toEqual(["code", "details", "message"]);
  });
});
