// Creates or validates the one JetStream stream holding every agent stream. The partition
// count is part of the data layout (it is in every subject), so it is recorded in the stream's
// description and a store opened with a different count refuses to start.

import { AgentRuntimeError } from "@agentrt/contract";
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, type JetStreamManager, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import { createShared } from "./shared-create.ts";
import type { SubjectScheme } from "./subjects.ts";

export interface EventStreamSpec {
  readonly streamName: string;
  readonly scheme: SubjectScheme;
  readonly partitionCount: number;
  readonly replicas: number;
  readonly storage: "file" | "memory";
  /** Window in which a retried publish with the same Nats-Msg-Id is deduplicated. */
  readonly duplicateWindowMs: number;
}

const DESCRIPTION = /^agentrt events; partitions=(\d+)$/;

function streamConfig(spec: EventStreamSpec, description: string, subjects: string[]): Partial<StreamConfig> & { name: string } {
  return {
    name: spec.streamName,
    description,
    subjects,
    retention: RetentionPolicy.Limits,
    storage: spec.storage === "file" ? StorageType.File : StorageType.Memory,
    num_replicas: spec.replicas,
    discard: DiscardPolicy.Old,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msgs_per_subject: -1,
    max_msg_size: 1024 * 1024,
    duplicate_window: nanos(spec.duplicateWindowMs),
    allow_direct: true,
    deny_delete: true,
    deny_purge: true,
  };
}

export async function ensureEventStream(jsm: JetStreamManager, spec: EventStreamSpec): Promise<void> {
  const description = `agentrt events; partitions=${spec.partitionCount}`;
  const subjects = [`${spec.scheme.durablePrefix}.>`];
  // Every service opens the store at start; those started together race to create it.
  const existing = await createShared(async (): Promise<StreamConfig | undefined> => {
    try {
      return (await jsm.streams.info(spec.streamName)).config;
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    }
    await jsm.streams.add(streamConfig(spec, description, subjects));
    return undefined;
  });
  if (existing === undefined) return;
  const recorded = DESCRIPTION.exec(existing.description ?? "");
  if (recorded !== null && Number(recorded[1]) !== spec.partitionCount) {
    throw new AgentRuntimeError(
      "conflict",
      `JetStream stream ${spec.streamName} was created with ${recorded[1]} partitions; this store was opened with ${spec.partitionCount}. The partition count is fixed per deployment.`,
      { details: { streamName: spec.streamName, recorded: Number(recorded[1]), requested: spec.partitionCount } },
    );
  }
  if (!existing.subjects.includes(subjects[0] as string)) {
    throw new AgentRuntimeError("conflict", `JetStream stream ${spec.streamName} does not capture ${subjects[0]}; it holds ${existing.subjects.join(", ")}.`, {
      details: { streamName: spec.streamName, subjects: existing.subjects },
    });
  }
  if (existing.allow_direct !== true || recorded === null) {
    // Direct get is how reads find their starting point cheaply; turn it on for older streams.
    await jsm.streams.update(spec.streamName, { ...existing, allow_direct: true, description });
  }
}
