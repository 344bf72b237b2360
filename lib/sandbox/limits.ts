/** What may cross from a bot's isolate to the host in one helper call (lib/sandbox/sandbox.ts checks it inside the isolate, lib/bot/helpers.ts again). */

/** The JSON arguments of one helper call, in characters. */
export const MAX_HELPER_ARGS = 256 * 1024;
/** The longest helper (op) name. */
export const MAX_OP_NAME = 64;
/** Helper calls in progress at once per isolate; more wait their turn inside the isolate. */
export const MAX_HOST_CALLS = 16;
