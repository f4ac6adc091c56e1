// Provider users (nats-permissions.ts): which lists can be rendered, and what a rendered
// provider user may do. That a real nats-server enforces them is test/security/nats-permissions.test.ts.

import { describe, expect, it } from "vitest";
import { chartNatsAuthorization, providerUsersProblem, renderNatsAuthorization, type NatsServiceUser, NATS_SERVICE_USERS } from "../src/nats-permissions.ts";
import { providersOfArgs } from "../scripts/nats-authorization.ts";

const passwords = Object.fromEntries(NATS_SERVICE_USERS.map((u) => [u, `pw-${u}`])) as Record<NatsServiceUser, string>;

describe("provider users", () => {
  it("given two providers serving distinct namespaces, when rendered, then each may publish and receive only its own namespaces' subjects", () => {
    const block = renderNatsAuthorization({
      passwords,
      providers: [
        { user: "provider-repo", namespaces: ["repo"], password: "a" },
        { user: "provider-two", namespaces: ["alpha", "beta"], password: "b" },
      ],
    });
    const two = block.slice(block.indexOf('user: "provider-two"'));
    expect(two).toContain('"agentrt.capabilities.register.alpha"\n          "agentrt.capabilities.revoke.alpha"\n          "agentrt.capabilities.register.beta"');
    expect(two).toContain('"_INBOX_provider-two.>"\n          "agentrt.capabilities.call.alpha"\n          "agentrt.capabilities.call.beta"');
    expect(two).not.toContain("repo");
    expect(two).not.toMatch(/register"|register\.\*|call\.>/);
  });

  it.each([
    [[{ user: "repo", namespaces: ["repo"] }], `providers[0].user: "repo" must be provider- then a lower-case letter or digit, then up to 40 of them or '-'`],
    [[{ user: "provider-Repo", namespaces: ["repo"] }], `providers[0].user: "provider-Repo" must be provider- then a lower-case letter or digit, then up to 40 of them or '-'`],
    [[{ user: "provider-a", namespaces: [] }], "providers[0].namespaces: provider-a must serve at least one namespace"],
    [[{ user: "provider-a", namespaces: ["re.po"] }], `providers[0].namespaces: "re.po" must be an identifier (a lower-case letter, then letters or digits; at most 63)`],
    [[{ user: "provider-a", namespaces: [">"] }], `providers[0].namespaces: ">" must be an identifier (a lower-case letter, then letters or digits; at most 63)`],
    [
      [
        { user: "provider-a", namespaces: ["repo"] },
        { user: "provider-b", namespaces: ["repo"] },
      ],
      `providers[1].namespaces: "repo" is already served by provider-a; one namespace, one provider user`,
    ],
    [
      [
        { user: "provider-a", namespaces: ["x"] },
        { user: "provider-a", namespaces: ["y"] },
      ],
      `providers[1].user: "provider-a" is listed twice`,
    ],
  ])("given %j, when checked, then it is refused naming the field and the rule", (providers, problem) => {
    expect(providerUsersProblem(providers)).toBe(problem);
    expect(() => renderNatsAuthorization({ passwords, providers: providers.map((p) => ({ ...p, password: "x" })) })).toThrow(`NATS provider users: ${problem}`);
  });

  it("given no providers or distinct ones, when checked, then there is no problem", () => {
    expect(providerUsersProblem([])).toBeNull();
    expect(providerUsersProblem([{ user: "provider-0a-b", namespaces: ["a", "b"] }, { user: "provider-c", namespaces: ["c"] }])).toBeNull();
  });

  it("given --provider arguments (an external NATS), when read, then each is a provider user, and the block carries it with its password variable", () => {
    const providers = providersOfArgs(["--provider", "provider-repo=repo", "--other", "--provider", "provider-two=alpha,beta"]);
    expect(providers).toEqual([
      { user: "provider-repo", namespaces: ["repo"] },
      { user: "provider-two", namespaces: ["alpha", "beta"] },
    ]);
    const block = chartNatsAuthorization(providers);
    expect(block).toContain('user: "provider-two"\n      password: $AGENTRT_NATS_PASSWORD_PROVIDER_TWO');
    expect(() => providersOfArgs(["--provider", "repo"])).toThrow('--provider: "repo" must be <user>=<namespace>[,<namespace>…], e.g. provider-repo=repo');
    expect(() => chartNatsAuthorization(providersOfArgs(["--provider", "provider-a=repo", "--provider", "provider-b=repo"]))).toThrow(/"repo" is already served by provider-a/);
  });
});
