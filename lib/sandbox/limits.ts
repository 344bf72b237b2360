/** What may cross from a bot's isolate to the host in one helper call (lib/sandbox/sandbox.ts checks it inside the isolate, lib/bot/helpers.ts again). */

/** The JSON arguments of one helper call, in characters. */
export const MAX_HELPER_ARGS = 256 * 1024;
/** The longest helper (op) name. */
export const MAX_OP_NAME = 64;
/** Helper calls in progress at once per isolate; more wait their turn inside the isolate. */
export const MAX_HOST_CALLS = 16;
/**
 * The JSON answer of one helper call copied into the isolate, in characters. Checked on the host
 * before the copy is made: a copy near the isolate's memory limit can end the process
 * (isolated-vm's FatalRuntimeError), and the host holds each answer while it is copied.
 */
export const MAX_HELPER_RESULT = 1024 * 1024;
/**
 * Helper answers copied into one isolate per event in flight, in characters (counted across the
 * events a sandbox runs together, from the moment it was last idle, as the log cap is).
 */
export const MAX_EVENT_RESULTS = 8 * 1024 * 1024;
