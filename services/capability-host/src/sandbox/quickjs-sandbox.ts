// Runs compiled script JavaScript in QuickJS (WebAssembly): one WASM module per thread, a
// fresh runtime + context per script, so nothing survives between scripts and a memory cap
// applies per script. The only bridge to the host is the `hostCall` function handed to the
// bootstrap; values cross as JSON strings. A CPU-bound loop is stopped by the interrupt
// handler; a script stuck awaiting the host is stopped by the wall-clock deadline.

import {
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSWASMModule,
  newQuickJSWASMModule,
  RELEASE_SYNC,
} from "quickjs-emscripten";
import { DEFAULT_MAX_JSON_DEPTH, jsonShapeOf } from "@agentrt/contract";
import { DEFAULT_MAX_EVENT_BYTES } from "@agentrt/streams";
import { ITX_FILE_MAX_BYTES } from "../itx/file-limits.ts";
import { SANDBOX_BOOTSTRAP } from "./bootstrap.ts";

export interface SandboxLimits {
  /** Heap cap per script, bytes. */
  readonly memoryBytes: number;
  /** Native stack cap per script, bytes. */
  readonly stackBytes: number;
  /**
   * Longest stretch a script may compute without awaiting. In a worker thread (the host's
   * default) a long stretch stalls only its own worker; run in-thread it stalls everything.
   */
  readonly maxSyncSliceMs: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { memoryBytes: 64 * 1024 * 1024, stackBytes: 512 * 1024, maxSyncSliceMs: 10_000 };

/**
 * Characters of JSON arguments the largest itx calls may carry out of the sandbox: a file write
 * (a 4 MiB file is 5.6 Mi characters as base64, or its text, escaped), a KV value or a provider
 * call (each one NATS message, at most 8 MiB on any server) and some room.
 */
export const MAX_CALL_ARGS_CHARS = 2 * ITX_FILE_MAX_BYTES + 64 * 1024;
/**
 * Characters of JSON arguments every other itx call may carry: those that append an event (at
 * most DEFAULT_MAX_EVENT_BYTES as JSON, so at most as many characters) and those that name a
 * key, a path or a query. One bound for all calls let a script pass 20 M characters of "€" to
 * chat.sendMessage, refused only once the host had copied, parsed and encoded them: two scripts
 * of one agent took the host from 458 MB to 2.5 GB (red-team).
 */
export const SMALL_CALL_ARGS_CHARS = DEFAULT_MAX_EVENT_BYTES + 64 * 1024;
/** The calls that may carry MAX_CALL_ARGS_CHARS; the rest SMALL_CALL_ARGS_CHARS. */
const LARGE_ARGS_OPS: ReadonlySet<string> = new Set(["files.write", "kv.set", "provider.call"]);

/** Characters of JSON arguments one call of `op` may carry. */
export function maxCallArgsChars(op: string): number {
  return LARGE_ARGS_OPS.has(op) ? MAX_CALL_ARGS_CHARS : SMALL_CALL_ARGS_CHARS;
}

/**
 * Characters of JSON arguments a script's unanswered itx calls may carry together: two of the
 * largest. Each call's arguments are copied out of QuickJS, whose heap cap then no longer counts
 * them: 250 calls of a 16 MB string each, started at once, took the host to 4.5 GB before any
 * bound applied.
 */
export const MAX_PENDING_CALL_ARGS_CHARS = 2 * MAX_CALL_ARGS_CHARS;

/**
 * Arrays, objects and object keys one itx call's arguments, or a script's result, may hold as
 * JSON. Their text is made inside QuickJS, whose heap cap bounds the values but not what the text
 * builds once the host parses it: `new Array(2e6).fill({})` is one object two million times, and
 * a script that replaces `Promise.prototype.then` hands back any text it likes. Eight million `{}`
 * in a result took the host to 6 GB and stopped its main thread for 24 s, for every tenant; one
 * object of two million keys, 1.3 GB and 11 s. (Numbers and strings in arrays are not counted: a
 * file written as bytes is an array of numbers, and the characters bound holds those.)
 */
export const MAX_JSON_NODES = 250_000;
/** Arrays, objects and keys the unanswered itx calls of one script may hold together, parsed in the host. */
export const MAX_PENDING_CALL_NODES = 500_000;
/** Characters of JSON a script's result may be (a result past 4 MiB could not be spilled to a file anyway). */
export const MAX_RESULT_CHARS = 20 * 1024 * 1024;

/** Why an itx call's copied-out arguments are refused (too deep, too many arrays, objects and keys), or undefined. */
export function callShapeRefusal(op: string, argsText: string, pendingNodes: number): { readonly refusal?: string; readonly nodes: number } {
  // The arguments' array is one level of the text; each value may nest the bound's.
  const shape = jsonShapeOf(argsText, DEFAULT_MAX_JSON_DEPTH + 1);
  const nodes = shape.containers + shape.keys;
  if (shape.depth > DEFAULT_MAX_JSON_DEPTH + 1) return { refusal: `itx ${op}: its arguments nest deeper than ${DEFAULT_MAX_JSON_DEPTH} levels of arrays and objects; pass flatter values.`, nodes };
  if (nodes > MAX_JSON_NODES) {
    return { refusal: `itx ${op}: its arguments hold ${nodes} arrays, objects and keys, past the ${MAX_JSON_NODES} one call may carry; pass fewer per call.`, nodes };
  }
  if (pendingNodes + nodes > MAX_PENDING_CALL_NODES) {
    return {
      refusal:
        `itx ${op}: this script's unanswered itx calls already hold ${pendingNodes} arrays, objects and keys, and this one's ${nodes} would pass the ` +
        `${MAX_PENDING_CALL_NODES} they may hold together; await some calls before starting more.`,
      nodes,
    };
  }
  return { nodes };
}

/** Why a script's result text is refused (too long, too deep, too many arrays, objects and keys), or undefined. */
export function resultShapeRefusal(text: string): string | undefined {
  if (text.length > MAX_RESULT_CHARS) {
    return `RangeError: the script's result is ${text.length} characters as JSON, past the ${MAX_RESULT_CHARS} a result may be; return less, or write it to files with itx.files.write().`;
  }
  const shape = jsonShapeOf(text, DEFAULT_MAX_JSON_DEPTH);
  // A result thousands of levels deep overflowed the host's JSON.stringify (settled as if the
  // host had stopped) or the structured clone to the host's thread (never reported: the script
  // held its sandbox until its deadline).
  if (shape.depth > DEFAULT_MAX_JSON_DEPTH) return `RangeError: the script's result nests deeper than ${DEFAULT_MAX_JSON_DEPTH} levels of arrays and objects; return flatter values.`;
  const nodes = shape.containers + shape.keys;
  if (nodes > MAX_JSON_NODES) {
    return `RangeError: the script's result holds ${nodes} arrays, objects and keys, past the ${MAX_JSON_NODES} a result may hold; return less, or write it to a file with itx.files.write().`;
  }
  return undefined;
}

/** Why an itx call's arguments are refused before they are copied, or undefined. */
export function callArgsRefusal(op: string, chars: number, pendingChars: number): string | undefined {
  if (!Number.isSafeInteger(chars) || chars < 0) {
    return `itx ${op}: its arguments did not become JSON text (is a toJSON or JSON.stringify replaced?); nothing was called.`;
  }
  const max = maxCallArgsChars(op);
  if (chars > max) {
    return `itx ${op}: its arguments are ${chars} characters as JSON, past the ${max} one call of it may carry; pass less per call.`;
  }
  if (pendingChars + chars > MAX_PENDING_CALL_ARGS_CHARS) {
    return (
      `itx ${op}: this script's unanswered itx calls already carry ${pendingChars} characters of arguments, and this one's ${chars} would pass the ` +
      `${MAX_PENDING_CALL_ARGS_CHARS} they may carry together; await some calls before starting more.`
    );
  }
  return undefined;
}

/** How a host function answers a script's call. Throw to reject inside the script. */
export type HostCallHandler = (op: string, args: unknown[]) => Promise<unknown>;

export interface SandboxRun {
  readonly javascript: string;
  readonly agentPath: string;
  /** Epoch ms after which the script is stopped. */
  readonly deadlineAtMs: number;
  readonly onHostCall: HostCallHandler;
}

export type SandboxOutcome =
  | { readonly kind: "returned"; readonly value: unknown; readonly startMs: number; readonly runMs: number }
  | { readonly kind: "threw"; readonly error: string; readonly startMs: number; readonly runMs: number }
  | { readonly kind: "deadline"; readonly startMs: number; readonly runMs: number }
  /** Stopped by `maxSyncSliceMs`: it computed that long without awaiting. */
  | { readonly kind: "slice"; readonly limitMs: number; readonly startMs: number; readonly runMs: number };

/** Where scripts run: in this thread (`QuickJsSandbox`) or in worker threads (`WorkerSandbox`). */
export interface ScriptSandbox {
  run(request: SandboxRun): Promise<SandboxOutcome>;
  close(): Promise<void>;
}

/** A script-visible error from a host function (its message is what the script sees). */
export class HostCallError extends Error {
  override readonly name = "HostCallError";
}

export class QuickJsSandbox implements ScriptSandbox {
  /** Replaced when a QuickJS abort (e.g. a leak assertion after out-of-memory) poisons it. */
  private module: QuickJSWASMModule;
  private replacing: Promise<void> | undefined;

  private constructor(
    module: QuickJSWASMModule,
    private readonly limits: SandboxLimits,
  ) {
    this.module = module;
  }

  /** How many times a poisoned WASM module was replaced (the host keeps serving). */
  modulesReplaced = 0;

  static async create(limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS): Promise<QuickJsSandbox> {
    return new QuickJsSandbox(await newQuickJSWASMModule(RELEASE_SYNC), limits);
  }

  async run(request: SandboxRun): Promise<SandboxOutcome> {
    if (this.replacing !== undefined) await this.replacing;
    const t0 = performance.now();
    const runtime = this.module.newRuntime();
    runtime.setMemoryLimit(this.limits.memoryBytes);
    runtime.setMaxStackSize(this.limits.stackBytes);
    let sliceStartedAt = Date.now();
    let sliceExceeded = false;
    /** While a thrown value is read (its getters run): until when (see `failure`). */
    const reading: ThrownRead = { untilMs: Number.POSITIVE_INFINITY };
    runtime.setInterruptHandler(() => {
      const now = Date.now();
      if (now > reading.untilMs) return true;
      if (now - sliceStartedAt > this.limits.maxSyncSliceMs) sliceExceeded = true;
      return sliceExceeded || now > request.deadlineAtMs;
    });
    const vm = runtime.newContext();
    const deferreds = new Set<QuickJSDeferredPromise>();
    let startMs = 0;
    let t1 = t0;
    const outcome = (partial: { kind: "returned"; value: unknown } | { kind: "threw"; error: string } | { kind: "deadline" }): SandboxOutcome => {
      const runMs = performance.now() - t1;
      // The interrupt fired for the slice limit: say so, not "execution deadline".
      if (partial.kind === "deadline" && sliceExceeded) return { kind: "slice", limitMs: this.limits.maxSyncSliceMs, startMs, runMs };
      return { ...partial, startMs, runMs };
    };
    // The script's own promise, kept to tell when it can never settle (see `checkStuck`).
    let script: QuickJSHandle | undefined;
    let nowStuck: (() => void) | undefined;
    const stuck = new Promise<"stuck">((resolve) => {
      nowStuck = () => resolve("stuck");
    });
    /**
     * A script awaiting a promise nothing will settle (`await new Promise(() => {})`) held its
     * sandbox slot until its deadline, up to two minutes, while other agents' scripts queued
     * behind it. With no job queued and no itx call unanswered (the sandbox has no timers), nothing
     * can ever settle it: it fails at once.
     */
    const checkStuck = () => {
      if (script === undefined || !script.alive || deferreds.size > 0 || runtime.hasPendingJob()) return;
      const state = vm.getPromiseState(script);
      if (state.type === "pending") nowStuck?.();
      else if (state.type === "rejected") state.error.dispose();
      else if (state.notAPromise !== true) state.value.dispose();
    };
    try {
      this.installBootstrap(
        vm,
        request,
        deferreds,
        () => {
          sliceStartedAt = Date.now();
        },
        checkStuck,
      );
      t1 = performance.now();
      startMs = t1 - t0;
      sliceStartedAt = Date.now();
      const evaluated = vm.evalCode(request.javascript, "script.js");
      if (evaluated.error) return outcome(this.failure(vm, evaluated.error, sliceExceeded ? 0 : request.deadlineAtMs, reading));
      script = evaluated.value;
      const settled = vm.resolvePromise(script);
      sliceStartedAt = Date.now();
      runtime.executePendingJobs();
      checkStuck();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"deadline">((resolve) => {
        timer = setTimeout(() => resolve("deadline"), Math.max(0, request.deadlineAtMs - Date.now()));
      });
      const result = await Promise.race([settled, deadline, stuck]);
      clearTimeout(timer);
      if (result === "deadline" || result === "stuck") {
        void settled.then((late) => late.dispose());
        if (result === "deadline") return outcome({ kind: "deadline" });
        return outcome({
          kind: "threw",
          error: "Error: the script awaits something nothing will ever settle (no itx call is pending and the sandbox has no timers), so it could never finish; it was stopped.",
        });
      }
      if (result.error) return outcome(this.failure(vm, result.error, sliceExceeded ? 0 : request.deadlineAtMs, reading));
      const handle = result.value;
      const type = vm.typeof(handle);
      const text = type === "string" ? vm.getString(handle) : undefined;
      handle.dispose();
      // Held to the bounds a call's arguments are held to, before anything is parsed.
      const refused = text === undefined ? undefined : resultShapeRefusal(text);
      if (refused !== undefined) return outcome({ kind: "threw", error: refused });
      return outcome({ kind: "returned", value: text === undefined ? undefined : (JSON.parse(text) as unknown) });
    } finally {
      try {
        if (script?.alive === true) script.dispose();
        for (const deferred of deferreds) if (deferred.alive) deferred.dispose();
        vm.dispose();
        runtime.dispose();
      } catch {
        // QuickJS aborted while freeing (its leak assertion after an out-of-memory): the WASM
        // instance is unusable, so the next script gets a fresh one.
        this.replaceModule();
      }
    }
  }

  async close(): Promise<void> {
    // Nothing to release: each script's runtime is disposed when it ends.
  }

  private replaceModule(): void {
    this.modulesReplaced++;
    this.replacing = newQuickJSWASMModule(RELEASE_SYNC).then((module) => {
      this.module = module;
      this.replacing = undefined;
    });
  }

  private installBootstrap(vm: QuickJSContext, request: SandboxRun, deferreds: Set<QuickJSDeferredPromise>, enterSlice: () => void, afterJobs: () => void): void {
    // Characters of arguments copied out for calls not yet answered (see MAX_PENDING_CALL_ARGS_CHARS),
    // and the arrays, objects and keys they hold (MAX_PENDING_CALL_NODES).
    let pendingChars = 0;
    let pendingNodes = 0;
    const hostCall = vm.newFunction("hostCall", (opHandle, argsHandle) => {
      const op = vm.getString(opHandle);
      // The length is read inside QuickJS, so arguments past the bounds are never copied out.
      // Not text when the script replaced a toJSON to return nothing: its length read NaN, which
      // passed every bound and made the unanswered calls' count NaN, so no later call was held
      // to it (red-team).
      const isText = vm.typeof(argsHandle) === "string";
      const chars = isText ? vm.getProp(argsHandle, "length").consume((h) => vm.getNumber(h)) : Number.NaN;
      const refusal = callArgsRefusal(op, chars, pendingChars);
      const argsText = refusal === undefined ? vm.getString(argsHandle) : "";
      const shape = refusal === undefined ? callShapeRefusal(op, argsText, pendingNodes) : { nodes: 0 };
      const refused = refusal ?? shape.refusal;
      let counted = refused === undefined;
      if (counted) {
        pendingChars += chars;
        pendingNodes += shape.nodes;
      }
      const deferred = vm.newPromise();
      deferreds.add(deferred);
      const settle = (fn: () => void): void => {
        if (counted) {
          counted = false;
          pendingChars -= chars;
          pendingNodes -= shape.nodes;
        }
        if (!vm.alive || !deferred.alive) return;
        try {
          fn();
          deferreds.delete(deferred);
          enterSlice();
          vm.runtime.executePendingJobs();
          afterJobs();
        } catch {
          // The context was torn down (deadline) while this call was in flight: nothing to do.
        }
      };
      Promise.resolve()
        .then(() => {
          // Held to the gateway's nesting bound: a value of a few thousand levels overflowed the
          // structured clone to the host's thread, the call was never answered, and the script
          // hung until its deadline holding a sandbox. And to a count of arrays, objects and keys
          // (MAX_JSON_NODES), before anything is parsed.
          if (refused !== undefined) throw new RangeError(refused);
          return request.onHostCall(op, JSON.parse(argsText) as unknown[]);
        })
        .then(
          (value) =>
            settle(() => {
              if (value === undefined) deferred.resolve(vm.undefined);
              else vm.newString(JSON.stringify(value)).consume((h) => deferred.resolve(h));
            }),
          (error: unknown) =>
            settle(() => {
              const e = error instanceof Error ? error : new Error(String(error));
              vm.newError({ name: e.name === "Error" ? "Error" : e.name, message: e.message }).consume((h) => deferred.reject(h));
            }),
        );
      return deferred.handle;
    });
    const config = vm.newString(JSON.stringify({ agentPath: request.agentPath }));
    const boot = vm.unwrapResult(vm.evalCode(SANDBOX_BOOTSTRAP, "bootstrap.js"));
    try {
      vm.unwrapResult(vm.callFunction(boot, vm.undefined, hostCall, config)).dispose();
    } finally {
      boot.dispose();
      config.dispose();
      hostCall.dispose();
    }
  }

  /**
   * What a script threw, as text. Reading it runs the script's code (a getter of `message`, a
   * `toJSON`): one that never returns held the host's worker for the whole 10 s slice and was
   * then reported as "[object Object]". It is read within THROWN_READ_MS, or reported as unreadable.
   */
  private failure(vm: QuickJSContext, errorHandle: QuickJSHandle, deadlineAtMs: number, reading: ThrownRead): { kind: "threw"; error: string } | { kind: "deadline" } {
    reading.untilMs = Date.now() + THROWN_READ_MS;
    let dumped: unknown;
    let readable = true;
    try {
      dumped = vm.dump(errorHandle);
    } catch {
      readable = false;
    } finally {
      if (Date.now() > reading.untilMs) readable = false;
      reading.untilMs = Number.POSITIVE_INFINITY;
      errorHandle.dispose();
    }
    // Past the deadline (the read may have been what the deadline stopped): the run's deadline.
    if (Date.now() > deadlineAtMs) return { kind: "deadline" };
    if (!readable) {
      return {
        kind: "threw",
        error: `Error: the script threw a value that could not be read in ${THROWN_READ_MS} ms (reading it runs the value's getters or toJSON, and walks all of it); throw an Error with a plain message instead.`,
      };
    }
    const error = describeThrown(dumped);
    if (Date.now() > deadlineAtMs && /interrupted/i.test(error)) return { kind: "deadline" };
    return { kind: "threw", error };
  }
}

/** How long reading a thrown value (which may run the script's getters) may take. */
export const THROWN_READ_MS = 1_000;

interface ThrownRead {
  untilMs: number;
}

function describeThrown(value: unknown): string {
  if (typeof value === "object" && value !== null && "message" in value) {
    const { name, message } = value as { name?: unknown; message?: unknown };
    const prefix = typeof name === "string" && name.length > 0 ? `${name}: ` : "";
    return `${prefix}${String(message)}`;
  }
  if (typeof value === "string") return value;
  return JSON.stringify(value) ?? String(value);
}
