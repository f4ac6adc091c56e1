// Stream paths hash into a fixed number of partitions so reducer replicas can split agents
// with plain subject filters. FNV-1a is stable across processes, versions and languages.

export function fnv1a32(text: string): number {
  // Over the text's UTF-8 bytes (as TextEncoder makes them, a lone surrogate as U+FFFD), without
  // making them: every append and every feed batch names its stream's partition.
  let hash = 0x811c9dc5;
  const byte = (b: number): void => {
    hash ^= b;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  };
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      byte(c);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else {
        c = 0xfffd;
      }
    }
    if (c < 0x800) {
      byte(0xc0 | (c >> 6));
    } else if (c < 0x10000) {
      byte(0xe0 | (c >> 12));
      byte(0x80 | ((c >> 6) & 0x3f));
    } else {
      byte(0xf0 | (c >> 18));
      byte(0x80 | ((c >> 12) & 0x3f));
      byte(0x80 | ((c >> 6) & 0x3f));
    }
    byte(0x80 | (c & 0x3f));
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
