// @agentrt/streams/jetstream: the event store on NATS JetStream, for services and integration
// tests. Behind a subpath so code written against the port (and unit tests on the memory
// store) does not load the NATS client.
export { JetStreamEventStore, type JetStreamEventStoreOptions } from "./store.ts";
export { openServiceStore } from "./service-store.ts";
