// The JavaScript that builds `itx` INSIDE the QuickJS context, before the script runs. It
// receives one host function (`hostCall(op, argsJson) → Promise<resultJson>`) as an argument,
// so the raw bridge never lands on a global the script could reach; only strings cross.
// Unknown namespaces (`itx.repo`, any provider) become a proxy whose methods call
// "provider.call": providers extend the surface without a change here.

export const SANDBOX_BOOTSTRAP = String.raw`(function (hostCall, configJson) {
  "use strict";
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const config = parse(configJson);
  const call = (op, args) =>
    hostCall(op, stringify(args)).then((text) => (text === undefined ? undefined : parse(text)));
  const freeze = Object.freeze;
  const streamHandle = (path) => freeze({
    getEvent: (args) => call("streams.getEvent", [path, args]),
    read: (args) => call("streams.read", [path, args === undefined ? {} : args]),
  });
  const agentHandle = (path) => freeze({
    path,
    create: () => call("agents.create", [path]),
    message: (text) => call("agents.message", [path, text]),
  });
  // A file's bytes cross as base64 (4/3 of their size), not as an array of numbers (a JS array
  // of 4 M numbers and its JSON in the host per 4 MiB read, several per script at once).
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_INDEX = new Uint8Array(128);
  for (let i = 0; i < 64; i++) B64_INDEX[B64.charCodeAt(i)] = i;
  const fromBase64 = (text) => {
    const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
    const out = new Uint8Array((text.length / 4) * 3 - pad);
    let o = 0;
    for (let i = 0; i < text.length; i += 4) {
      const n = (B64_INDEX[text.charCodeAt(i)] << 18) | (B64_INDEX[text.charCodeAt(i + 1)] << 12) | (B64_INDEX[text.charCodeAt(i + 2)] << 6) | B64_INDEX[text.charCodeAt(i + 3)];
      out[o++] = n >> 16;
      if (o < out.length) out[o++] = (n >> 8) & 255;
      if (o < out.length) out[o++] = n & 255;
    }
    return out;
  };
  // A file written as bytes crosses as base64 too: as an array of numbers a 4 MiB file was 16 M
  // characters of arguments, which the host copied, parsed and held several times over. Built as
  // character codes in a typed array, then made text in slices: string concatenation per group
  // took QuickJS over 10 s for 4 MiB.
  const B64_CODES = new Uint8Array(64);
  for (let i = 0; i < 64; i++) B64_CODES[i] = B64.charCodeAt(i);
  const toBase64 = (bytes) => {
    const n = bytes.length;
    const out = new Uint8Array(Math.ceil(n / 3) * 4);
    let o = 0;
    let i = 0;
    for (; i + 2 < n; i += 3) {
      const v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
      out[o++] = B64_CODES[v >> 18];
      out[o++] = B64_CODES[(v >> 12) & 63];
      out[o++] = B64_CODES[(v >> 6) & 63];
      out[o++] = B64_CODES[v & 63];
    }
    if (i < n) {
      const v = (bytes[i] << 16) | ((i + 1 < n ? bytes[i + 1] : 0) << 8);
      out[o++] = B64_CODES[v >> 18];
      out[o++] = B64_CODES[(v >> 12) & 63];
      out[o++] = i + 1 < n ? B64_CODES[(v >> 6) & 63] : 61;
      out[o++] = 61;
    }
    const parts = [];
    for (let s = 0; s < out.length; s += 2048) parts.push(String.fromCharCode.apply(null, out.subarray(s, s + 2048)));
    return parts.join("");
  };
  const toWire = (value) => (value instanceof Uint8Array ? { __base64: toBase64(value) } : value);
  const fileHandle = (path) => freeze({
    path,
    bytes: () => call("files.bytes", [path]).then((wire) => fromBase64(wire.__base64)),
    text: () => call("files.text", [path]),
  });
  const builtins = freeze({
    chat: freeze({ sendMessage: (text) => call("chat.sendMessage", [text]) }),
    agent: freeze({ path: config.agentPath, append: (event) => call("agent.append", [event]) }),
    streams: freeze({ get: streamHandle }),
    agents: freeze({ get: agentHandle }),
    kv: freeze({
      get: (key) => call("kv.get", [key]),
      set: (key, value) => call("kv.set", [key, value]),
      delete: (key) => call("kv.delete", [key]),
      list: (prefix) => call("kv.list", [prefix === undefined ? "" : prefix]),
    }),
    files: freeze({
      get: fileHandle,
      write: (path, content) => call("files.write", [path, toWire(content)]),
      list: (prefix) => call("files.list", [prefix === undefined ? "" : prefix]),
    }),
    capabilityHost: freeze({ getScriptResult: (id) => call("capabilityHost.getScriptResult", [id]) }),
    docs: freeze({
      search: (args) => call("docs.search", [args]),
      typecheck: (args) => call("docs.typecheck", [args]),
    }),
  });
  const isPlainName = (name) => typeof name === "string" && name !== "then" && name !== "toJSON";
  const itx = new Proxy(builtins, {
    get(target, namespace) {
      if (Object.prototype.hasOwnProperty.call(target, namespace)) return target[namespace];
      if (!isPlainName(namespace)) return undefined;
      return new Proxy({}, {
        get(_, method) {
          if (!isPlainName(method)) return undefined;
          return (...args) => call("provider.call", [namespace, method, args]);
        },
      });
    },
  });
  Object.defineProperty(globalThis, "itx", { value: itx, writable: false, configurable: false });
  const finish = (value) => {
    if (value === undefined) return undefined;
    const text = stringify(value);
    if (text === undefined) throw new TypeError("The script's result is not a JSON value (got " + typeof value + ").");
    return text;
  };
  Object.defineProperty(globalThis, "__finish", {
    value: (promise) => Promise.resolve(promise).then(finish),
    writable: false,
    configurable: false,
  });
})`;
