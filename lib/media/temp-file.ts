/**
 * Where uploaded and downloaded bytes go while they are checked: a private temporary file, never
 * memory. Policy: every byte passes a limit check before it is written, so nothing is kept beyond
 * the limit (the smaller of the ceiling and the caller's remaining upload budget); the limit can
 * tighten once the first bytes show what the content is (`onHead`); the SHA-256 is computed on the
 * way; and the file is removed by whoever created the sink, whatever happens (`remove` is
 * idempotent). The head (first bytes) is kept for signature sniffing.
 */
import { createHash, type Hash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SNIFF_BYTES } from './types.js';

export type LimitReason = 'ceiling' | 'budget' | 'inline';

/** The bytes went past the sink's limit; `reason` says which limit it was. */
export class LimitExceeded extends Error {
  constructor(readonly limit: number, readonly reason: LimitReason) {
    super(`more than ${limit} bytes (${reason})`);
    this.name = 'LimitExceeded';
  }
}

export interface TempFile {
  path: string;
  size: number;
  /** The first bytes (up to SNIFF_BYTES). */
  head: Buffer;
  /** Hex SHA-256 of the content. */
  sha256: string;
  remove(): Promise<void>;
}

export type HeadHook = (head: Buffer, sink: TempFileSink) => void | Promise<void>;

export class TempFileSink implements TempFile {
  size = 0;
  head: Buffer = Buffer.alloc(0);
  sha256 = '';
  private readonly hash: Hash = createHash('sha256');
  private headChunks: Buffer[] = [];
  private headDone = false;
  private closed = false;
  private removed = false;

  private constructor(
    readonly path: string,
    private readonly dir: string,
    private readonly handle: fs.FileHandle,
    public limit: number,
    public limitReason: LimitReason,
    /** Called once with the head; may tighten the limit (setLimit). */
    private readonly onHead?: HeadHook,
  ) {}

  /** A new private temporary file in a fresh folder under `parent` (default: the system temp folder). */
  static async create(limit: number, reason: LimitReason, onHead?: HeadHook, parent = os.tmpdir()): Promise<TempFileSink> {
    await fs.mkdir(parent, { recursive: true, mode: 0o700 });
    const dir = await fs.mkdtemp(path.join(parent, 'svc-upload-'));
    const file = path.join(dir, 'data');
    const handle = await fs.open(file, 'wx', 0o600);
    return new TempFileSink(file, dir, handle, limit, reason, onHead);
  }

  /** Lowers (never raises) the limit. */
  setLimit(limit: number, reason: LimitReason): void {
    if (limit < this.limit) {
      this.limit = limit;
      this.limitReason = reason;
    }
    if (this.size > this.limit) throw new LimitExceeded(this.limit, this.limitReason);
  }

  /** Refuses a declared length over the limit before any byte is read. */
  precheck(declaredLength: number): void {
    if (declaredLength > this.limit) throw new LimitExceeded(this.limit, this.limitReason);
  }

  async write(chunk: Buffer): Promise<void> {
    if (this.closed) throw new Error('TempFileSink: write after finish');
    if (chunk.length === 0) return;
    if (this.size + chunk.length > this.limit) throw new LimitExceeded(this.limit, this.limitReason);
    if (!this.headDone) {
      await this.collectHead(chunk);
      // The head may have tightened the limit.
      if (this.size + chunk.length > this.limit) throw new LimitExceeded(this.limit, this.limitReason);
    }
    this.hash.update(chunk);
    let off = 0;
    while (off < chunk.length) {
      const { bytesWritten } = await this.handle.write(chunk, off, chunk.length - off);
      off += bytesWritten;
    }
    this.size += chunk.length;
  }

  private async collectHead(chunk: Buffer): Promise<void> {
    const have = this.headChunks.reduce((n, c) => n + c.length, 0);
    // A copy: the caller may reuse its chunk's memory.
    this.headChunks.push(Buffer.from(chunk.subarray(0, SNIFF_BYTES - have)));
    if (have + chunk.length >= SNIFF_BYTES) await this.completeHead();
  }

  private async completeHead(): Promise<void> {
    if (this.headDone) return;
    this.headDone = true;
    this.head = Buffer.concat(this.headChunks);
    this.headChunks = [];
    await this.onHead?.(this.head, this);
  }

  /** Closes the file; the sink is then a TempFile. */
  async finish(): Promise<TempFile> {
    if (!this.closed) {
      await this.completeHead();
      this.closed = true;
      this.sha256 = this.hash.digest('hex');
      await this.handle.close();
    }
    return this;
  }

  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    if (!this.closed) {
      this.closed = true;
      await this.handle.close().catch(() => undefined);
    }
    await fs.rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
