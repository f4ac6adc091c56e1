// The web UI's hash routes (ui/src/route.ts).
import { describe, expect, it } from "vitest";
import { parseHash } from "../ui/src/route.ts";

describe("the UI's hash routes", () => {
  it("given an agent's, its events' and a request's link, when parsed, then each names its page and the decoded path", () => {
    expect(parseHash("#/agent/%2Fagents%2Fa")).toEqual({ page: "agent", path: "/agents/a", tab: "chat" });
    expect(parseHash("#/agent/%2Fagents%2Fa/events")).toEqual({ page: "agent", path: "/agents/a", tab: "events" });
    expect(parseHash("#/agent/%2Fagents%2Fa/request/12")).toEqual({ page: "request", path: "/agents/a", offset: 12 });
  });

  it("given a malformed percent-encoding or any other hash, when parsed, then it is the agents list, not a thrown error (a blank page)", () => {
    expect(parseHash("#/agent/%E0")).toEqual({ page: "list" });
    expect(parseHash("#/agent/%")).toEqual({ page: "list" });
    expect(parseHash("#/elsewhere")).toEqual({ page: "list" });
    expect(parseHash("")).toEqual({ page: "list" });
  });
});
