// @agentrt/streams/jetstream: the event store on NATS JetStream, for services and integration
// tests. Behind a subpath so code written against the port (and unit tests on the memory
// store) does not load the NATS client.
export { DEFAULT_PUBLISH_TIMEOUT_MS, JetStreamEventStore, type JetStreamEventStoreOptions } from "./store.ts";
export type { LiveEventsDropped } from "./subscriptions.ts";
export { openServiceStore } from "./service-store.ts";
// The lean acknowledged publish the store appends with, for a service's other hot publishes.
export { JetStreamPublisher, PublishDuplicateError, PublishRejectedError, PublishUnconfirmedError } from "./publisher.ts";
export { DirectGets, type DirectKvEntry, type DirectMessage } from "./direct-get.ts";
// The live lane's header naming the event types a message carries (for tools that watch NATS).
export { LIVE_TYPES_HEADER } from "./subjects.ts";
// The one rule for "NATS did not answer; trying again may succeed", for the services' own
// start-up waits and retries (service-kit) as well as the store's error classification.
export { isTransient as isTransientNatsError } from "./errors.ts";
// Creating a stream or bucket that other processes starting at the same moment create too.
export { createShared, isCreateRace, SHARED_CREATE_BUDGET_MS } from "./shared-create.ts";
// A reply subject under the connection's own inbox prefix (each NATS user reads only its own).
export { newInbox } from "./inbox-requests.ts";
// Signed records: what a store signs with and whose records it reads (signing.ts).
export { KEY_ID_HEADER, keyIdOf, type RecordSigner, type RecordSigning, type RecordTrust, SIGNATURE_HEADER, SIGNER_HEADER } from "./signing.ts";
