/**
 * Types that tie handlers to the generated contract: a handler for operation K receives K's
 * path, query and body types and must return K's success `data` type. The handler maps
 * (`Handlers<operations>`) have one entry per operationId, so an operation without a handler,
 * or a handler without an operation, fails the type check (and start-up, see http/dispatch.ts).
 */
import type { Request } from 'express';
import type { Readable } from 'node:stream';
import type { AppDeps } from './app-deps.js';
import type { AuthContext } from '../lib/access/types.js';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Responses<Op> = Op extends { responses: infer R } ? R : never;
type SuccessCode = 200 | 201 | 202;
type SuccessBody<Op> = Json<Responses<Op>[Extract<keyof Responses<Op>, SuccessCode>]>;

/** The `data` member of an operation's success response. */
export type DataOf<Op> = SuccessBody<Op> extends { data: infer D } ? D : never;
export type PathOf<Op> = Op extends { parameters: { path: infer P } } ? P : Record<string, never>;
export type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : Record<string, never>;
export type BodyOf<Op> = Op extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : Op extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;

export interface HandlerRequest<Op> {
  params: PathOf<Op>;
  query: QueryOf<Op>;
  body: BodyOf<Op>;
  /** Set for operations that need a credential. */
  auth?: AuthContext;
  requestId: string;
  /** The request's Idempotency-Key, once middleware/idempotency.ts validated and claimed it (x-idempotent operations). */
  idempotencyKey?: string;
  /** The Express request, for what the contract does not type (headers, raw body). */
  http: Request;
}

export type Reply<Op> =
  | {
      status?: Extract<keyof Responses<Op>, SuccessCode>;
      data: DataOf<Op>;
      headers?: Record<string, string>;
      /** The operation stored this answer for the request's Idempotency-Key itself, in its own statement (middleware/idempotency.ts does not store it again). */
      keyAnswered?: boolean;
    }
  /** A body sent as is, without the envelope (the OpenAPI document itself). */
  | { status?: number; raw: unknown }
  /** Bytes streamed as they are read (a file download), never held whole; `headers` name their type. */
  | { status?: number; stream: Readable; headers: Record<string, string> };

export type Handler<Op> = (req: HandlerRequest<Op>, deps: AppDeps) => Promise<Reply<Op>>;

export type Handlers<Ops> = { [K in keyof Ops]: Handler<Ops[K]> };

/** Handlers by operationId, as a contract pipeline receives them (typed per operation where they are defined). */
export type HandlerMap = Record<string, Handler<any>>;
