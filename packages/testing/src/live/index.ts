// Live subscribers of the gateway (SSE and WebSocket) for tests and benches.
export { readSseFrames, type SseFrame } from "./sse.ts";
export { collectLive, followLive, liveUrl, resumingFollower, type FollowLiveOptions, type LiveFollower, type LiveMessage, type LiveTransport } from "./follow.ts";
export { checkSequence } from "./sequence.ts";
