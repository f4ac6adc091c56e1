// The size bound of itx.files, on its own so the sandbox (in its worker thread) can size the
// arguments of a file write without loading the storage and its NATS clients.

/**
 * The largest file a script may write or read through itx.files. A read is handed to the
 * sandbox whole (as base64), so without a bound one call on a large file held several times its
 * size in the host process.
 */
export const ITX_FILE_MAX_BYTES = 4 * 1024 * 1024;
