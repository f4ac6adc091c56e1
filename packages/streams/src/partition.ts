// Stream paths hash into a fixed number of partitions so reducer replicas can split agents
// with plain subject filters. FNV-1a is stable across processes, versions and languages.

export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  const bytes = new TextEncoder().encode(text);
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

export function partitionOfPath(streamPath: string, partitionCount: number): number {
  return fnv1a32(streamPath) % partitionCount;
}

export function validatePartitionCount(partitionCount: number): number {
  if (!Number.isInteger(partitionCount) || partitionCount < 1 || partitionCount > 4096) {
    throw new RangeError(`partitionCount must be an integer from 1 to 4096, got ${partitionCount}`);
  }
  return partitionCount;
}
