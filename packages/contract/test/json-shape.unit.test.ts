// Given a JSON text, when its shape is scanned, then the keys it holds, and where one object
// names a key twice, are found without trusting JSON.parse (which keeps the last silently).

import { describe, expect, it } from "vitest";
import { duplicateKeyPath, jsonKeyCount, jsonShapeOf } from "../src/index.ts";

describe("keys of a JSON text and of its parsed value", () => {
  it("given text without duplicates, then the text's keys and the parsed value's keys agree", () => {
    for (const text of ['{"a":{"k":1},"b":[{"k":2},{"k":":"}],"__proto__":{"x":1}}', "[]", '"a:b"', '[{"":0}]']) {
      expect(jsonKeyCount(JSON.parse(text))).toBe(jsonShapeOf(text).keys);
      expect(duplicateKeyPath(text)).toBeUndefined();
    }
  });

  it("given a key twice in one object, then the parsed value holds fewer keys, and the second one's path is named", () => {
    const text = '{"events":[{"type":"x","payload":{"t":1,"t":2}}]}';
    expect(jsonKeyCount(JSON.parse(text))).toBeLessThan(jsonShapeOf(text).keys);
    expect(duplicateKeyPath(text)).toEqual(["events", 0, "payload", "t"]);
  });

  it("given the same key spelled with escapes, or braces inside strings, then keys are compared decoded and strings are skipped", () => {
    expect(duplicateKeyPath('{"ab":1,"a\\u0062":2}')).toEqual(["ab"]);
    expect(duplicateKeyPath('{"a":"{\\"a\\":1,\\"a\\":2}","b":"\\\\"}')).toBeUndefined();
    expect(duplicateKeyPath('[[0,1],[2,{"k":[],"k":{}}]]')).toEqual([1, 1, "k"]);
    // Text that does not parse ends the scan, never loops
    expect(duplicateKeyPath('{"a":1,"b')).toBeUndefined();
  });
});
