// The read gate: one key's flood waits its turn without holding up another key's read.
import { describe, expect, it } from "vitest";
import { ReadGate } from "../src/api/read-gate.ts";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("ReadGate", () => {
  it("given a key at its share, when another key reads, then it starts at once while the first key's extra read waits", async () => {
    const gate = new ReadGate({ perKey: 2, total: 4 });
    const started: string[] = [];
    const finish = [deferred(), deferred(), deferred()];
    const flood = finish.map((d, i) => gate.run("flooder", undefined, async () => {
      started.push(`flooder-${i}`);
      await d.promise;
    }));
    await tick();
    expect(started).toEqual(["flooder-0", "flooder-1"]);
    expect(gate.queued).toBe(1);
    await gate.run("tenant", undefined, async () => started.push("tenant"));
    expect(started).toEqual(["flooder-0", "flooder-1", "tenant"]);
    finish[0]?.resolve();
    await tick();
    await tick();
    expect(started).toEqual(["flooder-0", "flooder-1", "tenant", "flooder-2"]);
    finish[1]?.resolve();
    finish[2]?.resolve();
    await Promise.all(flood);
    expect(gate.queued).toBe(0);
  });

  it("given the gateway at its total, when a read finishes, then the next admitted is the first waiting key under its share", async () => {
    const gate = new ReadGate({ perKey: 1, total: 2 });
    const order: string[] = [];
    const a = deferred();
    const b = deferred();
    const first = gate.run("a", undefined, async () => {
      order.push("a1");
      await a.promise;
    });
    const second = gate.run("b", undefined, async () => {
      order.push("b1");
      await b.promise;
    });
    const a2 = gate.run("a", undefined, async () => order.push("a2"));
    const c1 = gate.run("c", undefined, async () => order.push("c1"));
    await tick();
    expect(order).toEqual(["a1", "b1"]);
    b.resolve(); // frees a total slot; "a" is still at its share, so "c" goes first
    await second;
    await c1;
    expect(order).toEqual(["a1", "b1", "c1"]);
    a.resolve();
    await Promise.all([first, a2]);
    expect(order).toEqual(["a1", "b1", "c1", "a2"]);
  });

  it("given a read waiting for admission, when its client goes away, then it leaves the queue with the abort reason", async () => {
    const gate = new ReadGate({ perKey: 1, total: 1 });
    const hold = deferred();
    const running = gate.run("k", undefined, () => hold.promise);
    const controller = new AbortController();
    let ran = false;
    const waiting = gate.run("k", controller.signal, async () => {
      ran = true;
    });
    await tick();
    expect(gate.queued).toBe(1);
    const gone = new Error("client went away");
    controller.abort(gone);
    await expect(waiting).rejects.toBe(gone);
    expect(gate.queued).toBe(0);
    hold.resolve();
    await running;
    expect(ran).toBe(false);
    await expect(gate.run("k", controller.signal, async () => 1)).rejects.toBe(gone);
  });
});
