/**
 * Where media asset bytes live. Policy: a small interface so the default (the local file system,
 * ./local-fs.ts) can be replaced by an S3-compatible store without touching callers: keys are
 * opaque strings of `[A-Za-z0-9._-]` segments joined by `/` (the caller builds them from ids,
 * never from user input); `putFile` stores a finished temporary file (which it may move);
 * `open` streams the bytes back; `delete` is idempotent.
 */
import type { Readable } from 'node:stream';

export interface BlobInfo {
  size: number;
  contentType: string;
  sha256: string;
}

export interface BlobStore {
  /** Stores the file at `filePath` under `key`; the file may be moved away. */
  putFile(key: string, filePath: string, info: BlobInfo): Promise<void>;
  /** The stored bytes; rejects when the key does not exist. */
  open(key: string): Promise<Readable>;
  /** Removes the key; no error when it does not exist. */
  delete(key: string): Promise<void>;
}

export const KEY_PATTERN = /^[A-Za-z0-9._-]{1,200}(\/[A-Za-z0-9._-]{1,200}){0,4}$/;

export function checkKey(key: string): string {
  if (!KEY_PATTERN.test(key) || key.split('/').some((s) => s === '.' || s === '..')) throw new Error(`Invalid blob key "${key}"`);
  return key;
}

