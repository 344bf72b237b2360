/**
 * The bot's host API: every operation the service performs for the bot, with the types of its
 * arguments and result. Generated from lib/bot/host-api.ts by scripts/generate-host-api.ts
 * (`npm run generate`): do not edit (the platform replaces it).
 */
import type { SendMessageRequest, TableFilter, TableRow } from '../runtime/types.js';

export interface HostOperations {
  /**
   * Sends a message the way of POST /v1/messages (contract validation, media, daily quota, 24-hour window, consent); never throws.
   * Limits: The project's daily send quota and the send path's rules; a send to the customer being answered is not sent twice when its event is replayed.
   * Preview: Recorded in the preview's `sends`, answered with a `preview.N` id; nothing is sent.
   */
  'send': {
    args: SendMessageRequest;
    result: {
      ok: true;
      /** The message id. */
      id: string;
    } | {
      ok: false;
      error: {
        /** A machine-readable code. */
        code: string;
        /** What went wrong, for people. */
        message: string;
      };
    };
  };
  /**
   * Sets a conversation's state (any value of 1 to 64 characters: the project's own states).
   * Limits: A conversation of the project (`not_found` otherwise).
   * Preview: Recorded in the preview's `state`; no conversation changes.
   */
  'setState': {
    args: {
      /** The conversation, from the event. */
      conversationId: number;
      /** The new state. */
      state: string;
    };
    result: true;
  };
  /**
   * Raises a custom event for the webhooks subscribed to its name; true when accepted, never throws.
   * Limits: Payload at most 65536 characters of JSON; BOT_EMITS_PER_MINUTE per project (false past it).
   * Preview: Recorded in the preview's `events`; nothing is delivered, nothing counted.
   */
  'emit': {
    args: {
      /** Letters, digits, `.`, `_`, `-`; at most 100 characters; not a platform event name. */
      name: string;
      /** Any JSON value (null when absent), at most 64 KiB. */
      payload?: unknown;
    };
    result: boolean;
  };
  /**
   * Writes a line to the project's bot log; false past the per-event cap.
   * Limits: 2000 characters a line; 100 lines per event (counted across the events a sandbox runs together).
   * Preview: Recorded in the preview's `logs`.
   */
  'log': {
    args: {
      level: 'debug' | 'info' | 'warn' | 'error';
      /** The line (control characters are stored escaped; secret values redacted). */
      message: string;
    };
    result: boolean;
  };
  /**
   * Marks the customer's message read and shows a typing indicator (cleared by the reply or after 25 s).
   * Limits: A message this project received (`not_found` otherwise).
   * Preview: Checked and answered true; no read mark is sent.
   */
  'showTyping': {
    args: {
      /** The id of the message being answered. */
      messageId: string;
    };
    result: true;
  };
  /**
   * Rows of one of the project's tables matching every filter.
   * Limits: At most 50 rows; the page byte cap (TABLES_PAGE_MAX_BYTES) and statement timeout of the tables API.
   * Preview: Reads the `preview` schema.
   */
  'tables.select': {
    args: {
      /** A table of the project's (public in production, preview in a preview run). */
      table: string;
      /** The columns to return (all by default). */
      columns?: Array<string>;
      /** Rows matching every filter. */
      filters?: Array<TableFilter>;
      /** The column to order by. */
      orderBy?: string;
      direction?: 'asc' | 'desc';
      /** At most this many rows (default 20). */
      limit?: number;
    };
    result: Array<TableRow>;
  };
  /**
   * Inserts one row; answers it as stored.
   * Limits: The schema's storage quota.
   * Preview: Writes the `preview` schema.
   */
  'tables.insert': {
    args: {
      /** A table of the project's (public in production, preview in a preview run). */
      table: string;
      /** A row: column name to value. */
      row: TableRow;
    };
    result: TableRow;
  };
  /**
   * Updates the rows matching every filter; answers how many changed.
   * Limits: The tables API's write rules (at least one filter).
   * Preview: Writes the `preview` schema.
   */
  'tables.update': {
    args: {
      /** A table of the project's (public in production, preview in a preview run). */
      table: string;
      /** Rows matching every filter. */
      filters: Array<TableFilter>;
      /** A row: column name to value. */
      set: TableRow;
    };
    result: number;
  };
  /**
   * Deletes the rows matching every filter; answers how many went.
   * Limits: The tables API's write rules (at least one filter).
   * Preview: Writes the `preview` schema.
   */
  'tables.delete': {
    args: {
      /** A table of the project's (public in production, preview in a preview run). */
      table: string;
      /** Rows matching every filter. */
      filters: Array<TableFilter>;
    };
    result: number;
  };
  /**
   * The value of one of the project's secrets, or null when there is none by that name. Read at each call: a changed secret is seen from the next event, without a redeploy.
   * Limits: BOT_SECRETS_MAX secrets per project, BOT_SECRET_MAX_BYTES bytes each (set by operators). Any value the bot prints into its log is written `[secret NAME]`.
   * Preview: Reads the same secrets, except those marked production-only (null in a preview).
   */
  'secrets.get': {
    args: {
      /** Like SHOP_API_TOKEN. */
      name: string;
    };
    result: string | null;
  };
  /**
   * Calls an https URL through the service (the isolate has no network); never throws: `{ ok: true, status, headers, body }` once an HTTP answer arrived (whatever its status), or `{ ok: false, error }`.
   * Limits: Public https hosts only (`forbidden_target`), the project's allowlist if an operator set one; at most 3 redirects; timeout default 5 s, at most 15 s and within the event's deadline (`timeout`); bodies at most BOT_HTTP_MAX_BODY_BYTES (1 MiB: `request_too_large`, `response_too_large`); BOT_HTTP_PER_MINUTE calls a minute and BOT_HTTP_CONCURRENCY at once per project (`rate_limited`).
   * Preview: Performed as in production (a preview reads the business systems too), within the same limits.
   */
  'http.fetch': {
    args: {
      /** An absolute https URL (http only to loopback under DEV_ALLOW_PRIVATE_TARGETS). */
      url: string;
      /** Default GET. */
      method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';
      /** Request headers (not Host, Content-Length, Connection, User-Agent…). */
      headers?: Record<string, string>;
      /** A UTF-8 text body (not with GET or HEAD). */
      body?: string | null;
      /** Default BOT_HTTP_TIMEOUT_MS (3000); ends 1 s before the event's deadline, so the bot can still answer. */
      timeoutMs?: number;
    };
    result: {
      ok: true;
      /** The HTTP status. */
      status: number;
      /** Answer headers, lower-case names (no Set-Cookie). */
      headers: Record<string, string>;
      /** The body as UTF-8 text. */
      body: string;
    } | {
      ok: false;
      error: {
        /** A machine-readable code. */
        code: string;
        /** What went wrong, for people. */
        message: string;
      };
    };
  };
  /**
   * Reads one of the project's stored files (uploaded by operators); never throws: `{ ok: true, name, contentType, size, text }` for plain text (JSON and CSV included), `{ ok: true, name, contentType, size, base64 }` for anything else, or `{ ok: false, error }` (`not_found`, `file_too_large`, `invalid_request`).
   * Limits: The project's files only (another project's name is `not_found`); at most BOT_FILE_READ_MAX_BYTES (1 MiB) a file (`file_too_large`, never a part of it).
   * Preview: Reads the same files.
   */
  'files.get': {
    args: {
      /** A file name of the project (letters, digits, `.`, `_`, `-`; never a path). */
      name: string;
    };
    result: {
      ok: true;
      /** The file name. */
      name: string;
      /** Its type, verified from the bytes. */
      contentType: string;
      /** Bytes. */
      size: number;
      /** The content (UTF-8), for text/plain. */
      text: string;
    } | {
      ok: true;
      /** The file name. */
      name: string;
      /** Its type, verified from the bytes. */
      contentType: string;
      /** Bytes. */
      size: number;
      /** The bytes, base64-encoded, for any other type. */
      base64: string;
    } | {
      ok: false;
      error: {
        /** A machine-readable code. */
        code: string;
        /** What went wrong, for people. */
        message: string;
      };
    };
  };
  /**
   * Turns one of the project's stored files into a media asset (uploaded to the channel once, reused until it expires there or the file is replaced) and answers its slug and kind for a send; never throws. `files.sendAsMedia` sends it.
   * Limits: The project's files only (`not_found`); the media kind's ceiling (image 5 MB, video and audio 16 MB, document 100 MB: `file_too_large`); a configured channel.
   * Preview: Makes (or reuses) the media asset as in production; the send that follows is captured as every preview send.
   */
  'files.media': {
    args: {
      /** A file name of the project. */
      name: string;
    };
    result: {
      ok: true;
      /** The media asset to send by (`media: { slug }`). */
      slug: string;
      /** The message type to send it as. */
      kind: 'image' | 'video' | 'audio' | 'document';
    } | {
      ok: false;
      error: {
        /** A machine-readable code. */
        code: string;
        /** What went wrong, for people. */
        message: string;
      };
    };
  };
  /**
   * Rejects a customer's call that is ringing (the way of POST /v1/calls/{id}/actions `reject`); never throws: `{ ok: true, call }` or `{ ok: false, error }` (`not_found`, `conflict` when the call is no longer ringing: already rejected, answered or ended).
   * Limits: The project's calls only (`not_found`); the call's status must allow it (`conflict`); the channel's refusals as the API's. Once per event: a rerun of the event does not act twice.
   * Preview: Checks that the call exists and answers it unchanged; nothing reaches WhatsApp.
   */
  'calls.reject': {
    args: {
      /** The call's id (`call.id` of the event, `wacid.…`), or the service's numeric id. */
      callId: string;
    };
    result: {
      ok: true;
      call: {
        /** The call id. */
        id: string;
        /** The call's status now (rejected). */
        status: string;
      };
    } | {
      ok: false;
      error: {
        /** A machine-readable code. */
        code: string;
        /** What went wrong, for people. */
        message: string;
      };
    };
  };
  /**
   * Hangs up a live call (the way of POST /v1/calls/{id}/actions `terminate`); never throws: `{ ok: true, call }` or `{ ok: false, error }` (`not_found`, `conflict` when the call already ended).
   * Limits: The project's calls only (`not_found`); the call's status must allow it (`conflict`); the channel's refusals as the API's. Once per event: a rerun of the event does not act twice.
   * Preview: Checks that the call exists and answers it unchanged; nothing reaches WhatsApp.
   */
  'calls.terminate': {
    args: {
      /** The call's id (`call.id` of the event, `wacid.…`), or the service's numeric id. */
      callId: string;
    };
    result: {
      ok: true;
      call: {
        /** The call id. */
        id: string;
        /** The call's status now (as it was: the end comes with the channel's notification). */
        status: string;
      };
    } | {
      ok: false;
      error: {
        /** A machine-readable code. */
        code: string;
        /** What went wrong, for people. */
        message: string;
      };
    };
  };
}

export type HostOpName = keyof HostOperations;
export type HostArgs<K extends HostOpName> = HostOperations[K]['args'];
export type HostResult<K extends HostOpName> = HostOperations[K]['result'];
