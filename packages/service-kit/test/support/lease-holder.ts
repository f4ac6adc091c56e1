// A lease holder in its own process, for tests that SIGSTOP or SIGKILL it: prints one JSON line
// per acquisition and loss.
//   node --import tsx lease-holder.ts <natsUrl> <group> <owner> <partitions>

import { connect } from "@nats-io/transport-node";
import { startPartitionLeases } from "../../src/index.ts";
import { testLogger } from "@agentrt/testing";

const [url, group, owner, partitions] = process.argv.slice(2) as [string, string, string, string];
const nc = await connect({ servers: url });
const say = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
await startPartitionLeases({
  nc,
  group,
  owner,
  partitionCount: Number(partitions),
  logger: testLogger("lease-holder"),
  onAcquired: (partition) => say({ acquired: partition }),
  onLost: (partition) => say({ lost: partition }),
});
say({ ready: true });
