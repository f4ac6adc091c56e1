// The NATS test harness: throwaway nats-server processes (single or clustered) per test file.
export { startNatsServer, type NatsServer, type NatsServerOptions } from "./server.ts";
export { startNatsCluster, type NatsCluster, type NatsClusterOptions } from "./cluster.ts";
export { containerEngineAvailable } from "./container.ts";
export { natsServerBinary } from "./node-process.ts";
export { freeLoopbackPort, freeLoopbackPorts } from "./ports.ts";
export { type ConsumerCounts, waitFor, waitForConsumerEmptied, type WaitOptions } from "./wait.ts";
