// A lease holder in its own process, for tests that SIGSTOP or SIGKILL it: prints one JSON line
// per acquisition and loss.
//   node --import tsx lease-holder.ts <natsUrl> <group> <owner> <partitions>

import { connect } from "@nats-io/transport-node";
import { createLogger, startPartitionLeases } from "../../src/index.ts";

const [url, group, owner, partitions] = process.argv.slice(2) as [string, string, string, string];
const nc = await connect({ servers: url });
const say = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
await startPartitionLeases({
  nc,
  group,
  owner,
  partitionCount: Number(partitions),
  logger: createLogger("lease-holder", "silent"),
  onAcquired: (partition) => say({ acquired: partition }),
  onLost: (partition) => say({ lost: partition }),
});
say({ ready: true });
