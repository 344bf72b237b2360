/** Everything the bot may use (managed by the platform): import from './platform/runtime/index.js'. */
export { send, sendText, sendButtons, setState, showTyping } from './messaging.js';
export { sendMedia } from './media.js';
export { newId } from './ids.js';
export { log } from './log.js';
export { tables, emit } from './connectors.js';
export { secrets } from './secrets.js';
export { http, type FetchOptions, type FetchResult } from './http.js';
export { files, type FileResult } from './files.js';
export { calls, type CallActionResult } from './calls.js';
export { HelperError } from './host.js';
export type { CallEventContext, InboundCall, InboundMessage, Schedule, ScheduleContext, SendMessageRequest, SendResult, TableFilter, TableRow } from './types.js';
