/**
 * Reads a multipart/form-data upload with busboy, streaming the one file part (`file`) into a
 * temporary file and keeping the few text fields.
 *
 * Policy: exactly one file, in the part named `file`; at most 10 text fields of at most 1,024
 * bytes each, 12 parts in all (400 `invalid_request` otherwise); the whole body at most `maxBytes`
 * (413 `payload_too_large`). The file's bytes go through the sink's limit; once the sink refuses
 * (too large, budget used), the rest of the body is read and discarded, so the answer reaches the
 * client on a healthy connection. Nothing of the file is kept in memory.
 */
import busboy from 'busboy';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { ApiError } from '../../lib/platform/errors.js';
import type { TempFileSink } from '../../lib/media/temp-file.js';

export interface MultipartUpload {
  fields: Record<string, string>;
  file?: TempFileSink;
  /** The part's own file name and type, as the client sent them. */
  partFilename?: string;
  partType?: string;
}

function invalid(message: string, field = 'body'): ApiError {
  return new ApiError('invalid_request', message, { fields: [{ field, message }] });
}

export function readMultipartUpload(
  source: Readable,
  headers: IncomingHttpHeaders,
  opts: { maxBytes: number; openSink: () => Promise<TempFileSink>; onSink: (sink: TempFileSink) => void },
): Promise<MultipartUpload> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers, limits: { files: 1, fields: 10, fieldSize: 1024, parts: 12, fieldNameSize: 100 } });
    } catch (e) {
      reject(invalid(`Malformed multipart/form-data request: ${(e as Error).message}`));
      return;
    }
    const result: MultipartUpload = { fields: {} };
    let failure: unknown;
    const fail = (e: unknown) => {
      failure ??= e;
    };
    let filePromise: Promise<void> = Promise.resolve();
    let seenFile = false;
    let total = 0;
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > opts.maxBytes) {
        source.off('data', onData);
        source.unpipe(bb);
        source.pause();
        reject(failure ?? new ApiError('payload_too_large', `Request body exceeds ${opts.maxBytes} bytes.`, { limit: opts.maxBytes }));
      }
    };
    source.on('data', onData);

    bb.on('field', (name, value, info) => {
      if (info.nameTruncated || info.valueTruncated) fail(invalid(`The multipart field ${name.slice(0, 100)} is too long.`, name.slice(0, 100)));
      else result.fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || seenFile) {
        stream.resume();
        fail(invalid(name === 'file' ? 'Send exactly one file.' : `Unexpected file part "${name.slice(0, 100)}": the file goes in the part named file.`, name.slice(0, 100)));
        return;
      }
      seenFile = true;
      result.partFilename = info.filename;
      result.partType = info.mimeType;
      filePromise = (async () => {
        let sink: TempFileSink | undefined;
        try {
          sink = await opts.openSink();
          opts.onSink(sink);
          result.file = sink;
        } catch (e) {
          fail(e);
        }
        await new Promise<void>((done) => {
          // Paused while each chunk is written (backpressure); after a failure, discarded.
          let broken = !sink;
          stream.on('data', (chunk: Buffer) => {
            if (broken) return;
            stream.pause();
            sink!.write(chunk).then(
              () => stream.resume(),
              (e) => {
                fail(e);
                broken = true;
                stream.resume();
              },
            );
          });
          stream.once('end', () => done());
          stream.once('error', (e) => {
            fail(invalid(`Malformed multipart/form-data request: ${e.message}`));
            done();
          });
        });
      })();
    });
    bb.on('partsLimit', () => fail(invalid('Too many parts in the multipart body.')));
    bb.on('filesLimit', () => fail(invalid('Send exactly one file.')));
    bb.on('fieldsLimit', () => fail(invalid('Too many fields in the multipart body.')));
    bb.on('error', (e) => {
      source.off('data', onData);
      source.unpipe(bb);
      source.resume();
      reject(failure ?? invalid(`Malformed multipart/form-data request: ${(e as Error).message}`));
    });
    bb.on('close', () => {
      source.off('data', onData);
      void filePromise.then(() => (failure ? reject(failure) : resolve(result)));
    });
    source.pipe(bb);
  });
}
