// The NATS permission lists (service-kit nats-permissions.ts) name this service's buckets,
// durable and subjects; they must be the ones the host really uses.
import { describe, expect, it } from "vitest";
import { CALL_SUBJECT_PREFIX, inboxPrefixOf, NAMESPACE_PATTERN, PROVIDER_INBOX_PREFIX, REGISTER_SUBJECT, registerSubject, REVOKE_SUBJECT, revokeSubject } from "@agentrt/capability-sdk";
import { NATS_NAMES, NATS_PERMISSIONS, natsInboxPrefix, PROVIDER_NAMESPACE_PATTERN, providerUserPermissions, workStreamName } from "@agentrt/service-kit";
import { AGENT_FILES_BUCKET, AGENT_FILES_INDEX_BUCKET, AGENT_KV_BUCKET, PROVIDERS_BUCKET } from "../src/index.ts";
import { HOST_LIVENESS_BUCKET, SCRIPT_RUNS_BUCKET } from "../src/host-liveness.ts";

describe("the capability host's NATS names in the permission lists", () => {
  it("are the host's own", () => {
    expect(NATS_NAMES.agentKvBucket).toBe(AGENT_KV_BUCKET);
    expect(NATS_NAMES.agentFilesBucket).toBe(AGENT_FILES_BUCKET);
    expect(NATS_NAMES.agentFilesIndexBucket).toBe(AGENT_FILES_INDEX_BUCKET);
    expect(NATS_NAMES.providersBucket).toBe(PROVIDERS_BUCKET);
    expect(NATS_NAMES.hostLivenessBucket).toBe(HOST_LIVENESS_BUCKET);
    expect(NATS_NAMES.scriptRunsBucket).toBe(SCRIPT_RUNS_BUCKET);
    expect(`${NATS_NAMES.capabilitiesPrefix}.register`).toBe(REGISTER_SUBJECT);
    expect(`${NATS_NAMES.capabilitiesPrefix}.revoke`).toBe(REVOKE_SUBJECT);
    expect(`${NATS_NAMES.capabilitiesPrefix}.call.`).toBe(CALL_SUBJECT_PREFIX);
    expect(natsInboxPrefix("capability-provider")).toBe(PROVIDER_INBOX_PREFIX);
    expect(natsInboxPrefix("provider-repo")).toBe(inboxPrefixOf("provider-repo"));
    expect(PROVIDER_NAMESPACE_PATTERN.source).toBe(NAMESPACE_PATTERN.source);
    // A provider's own user publishes its namespace's registration subjects, which the host serves.
    const own = providerUserPermissions("provider-repo", ["repo"]);
    expect(own.publish.allow).toEqual([registerSubject("repo"), revokeSubject("repo")]);
    expect(own.subscribe.allow).toContain(`${CALL_SUBJECT_PREFIX}repo`);
    expect(NATS_PERMISSIONS["capability-host"].subscribe.allow).toEqual(expect.arrayContaining([registerSubject("*"), revokeSubject("*")]));
    expect(NATS_PERMISSIONS["capability-provider"].subscribe.allow).toContain(`${PROVIDER_INBOX_PREFIX}.>`);
    expect(NATS_PERMISSIONS["capability-host"].publish.allow).toContain(`$JS.API.CONSUMER.MSG.NEXT.${workStreamName("script")}.${NATS_NAMES.hostDurable}`);
    expect(NATS_PERMISSIONS["capability-host"].publish.allow.filter((s) => s.includes(workStreamName("llm")))).toEqual([]);
  });
});
