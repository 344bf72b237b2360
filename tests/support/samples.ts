/**
 * Sample files generated in memory for upload tests: small but structurally real (signatures,
 * containers), padded to any size where a ceiling is tested. No binary fixtures in the repository.
 */
import { crc32, deflateSync } from 'node:zlib';

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td) >>> 0);
  return Buffer.concat([len, td, crc]);
}

/** A 1×1 RGB PNG, padded with a private ancillary chunk to at least `size` bytes. */
export function png(size = 0): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const idat = deflateSync(Buffer.from([0, 255, 0, 0]));
  const parts = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))];
  const base = Buffer.concat(parts).length;
  if (size > base) parts.splice(2, 0, pngChunk('prVt', Buffer.alloc(Math.max(0, size - base - 12), 0x41)));
  return Buffer.concat(parts);
}

/** A JPEG (SOI, JFIF APP0, comments for padding, EOI) of at least `size` bytes. */
export function jpeg(size = 0): Buffer {
  const app0 = Buffer.from([0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
  const parts = [Buffer.from([0xff, 0xd8]), app0];
  let have = 2 + app0.length + 2;
  while (have < size) {
    const payload = Math.min(Math.max(size - have - 4, 0), 65533);
    const seg = Buffer.alloc(4 + payload, 0x20);
    seg[0] = 0xff;
    seg[1] = 0xfe;
    seg.writeUInt16BE(payload + 2, 2);
    parts.push(seg);
    have += seg.length;
  }
  parts.push(Buffer.from([0xff, 0xd9]));
  return Buffer.concat(parts);
}

/** A PDF of at least `size` bytes. */
export function pdf(size = 0): Buffer {
  const head = '%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n';
  const tail = 'trailer << /Root 1 0 R >>\n%%EOF\n';
  const pad = Math.max(0, size - head.length - tail.length);
  return Buffer.from(head + '%'.padEnd(pad, ' ').slice(0, pad) + tail);
}

/** An ISO-BMFF file (ftyp + mdat) with major brand `brand` (isom → video/mp4, 3gp4 → video/3gpp) of `size` bytes. */
export function isoMedia(size = 1024, brand = 'isom'): Buffer {
  const ftyp = Buffer.alloc(24);
  ftyp.writeUInt32BE(24, 0);
  ftyp.write('ftyp', 4, 'ascii');
  ftyp.write(brand.padEnd(4, ' '), 8, 'ascii');
  ftyp.writeUInt32BE(0x200, 12);
  ftyp.write(brand.padEnd(4, ' '), 16, 'ascii');
  ftyp.write('mp41', 20, 'ascii');
  const mdatLen = Math.max(8, size - 24);
  const mdat = Buffer.alloc(mdatLen);
  mdat.writeUInt32BE(mdatLen, 0);
  mdat.write('mdat', 4, 'ascii');
  return Buffer.concat([ftyp, mdat]);
}

export const mp4 = (size?: number) => isoMedia(size, 'isom');
export const threeGp = (size?: number) => isoMedia(size, '3gp4');

/** A zip of stored (uncompressed) entries. */
export function zip(entries: Record<string, string | Buffer>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(entries)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    const nameBuf = Buffer.from(name);
    const crc = crc32(data) >>> 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBuf.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBuf.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBuf, data);
    centrals.push(central, nameBuf);
    offset += 30 + nameBuf.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const OOXML: Record<'docx' | 'xlsx' | 'pptx', { part: string; type: string }> = {
  docx: { part: 'word/document.xml', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml' },
  xlsx: { part: 'xl/workbook.xml', type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml' },
  pptx: { part: 'ppt/presentation.xml', type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml' },
};

/** A minimal Office Open XML package (docx, xlsx, pptx). */
export function ooxml(kind: 'docx' | 'xlsx' | 'pptx'): Buffer {
  const { part, type } = OOXML[kind];
  return zip({
    '[Content_Types].xml':
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
      `<Default Extension="xml" ContentType="application/xml"/><Override PartName="/${part}" ContentType="${type}"/></Types>`,
    [part]: '<?xml version="1.0" encoding="UTF-8"?><root/>',
  });
}

/** A minimal Compound File (CFB v3, 512-byte sectors) whose root holds one 4 KB stream `streamName`. */
export function cfb(streamName: string): Buffer {
  const SECTOR = 512;
  const header = Buffer.alloc(512, 0);
  Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(header, 0);
  header.writeUInt16LE(0x003e, 0x18);
  header.writeUInt16LE(0x0003, 0x1a);
  header.writeUInt16LE(0xfffe, 0x1c);
  header.writeUInt16LE(9, 0x1e);
  header.writeUInt16LE(6, 0x20);
  header.writeUInt32LE(1, 0x2c); // FAT sectors
  header.writeUInt32LE(1, 0x30); // first directory sector
  header.writeUInt32LE(4096, 0x38); // mini stream cutoff
  header.writeUInt32LE(0xfffffffe, 0x3c);
  header.writeUInt32LE(0xfffffffe, 0x44);
  for (let i = 0; i < 109; i++) header.writeUInt32LE(i === 0 ? 0 : 0xffffffff, 0x4c + i * 4);
  // Sector 0: FAT. 0 = FAT, 1 = directory (end), 2..9 = the stream.
  const fat = Buffer.alloc(SECTOR, 0xff);
  fat.writeUInt32LE(0xfffffffd, 0);
  fat.writeUInt32LE(0xfffffffe, 4);
  for (let s = 2; s <= 9; s++) fat.writeUInt32LE(s === 9 ? 0xfffffffe : s + 1, s * 4);
  // Sector 1: directory (root + stream + 2 empty entries).
  const dir = Buffer.alloc(SECTOR, 0);
  const entry = (i: number, name: string, type: number, child: number, start: number, size: number) => {
    const e = dir.subarray(i * 128, (i + 1) * 128);
    const n = Buffer.from(name + '\0', 'utf16le');
    n.copy(e, 0);
    e.writeUInt16LE(n.length, 0x40);
    e[0x42] = type;
    e[0x43] = 1;
    e.writeUInt32LE(0xffffffff, 0x44);
    e.writeUInt32LE(0xffffffff, 0x48);
    e.writeUInt32LE(child, 0x4c);
    e.writeUInt32LE(start, 0x74);
    e.writeUInt32LE(size, 0x78);
  };
  entry(0, 'Root Entry', 5, 1, 0xfffffffe, 0);
  entry(1, streamName, 2, 0xffffffff, 2, 4096);
  for (const i of [2, 3]) {
    const e = dir.subarray(i * 128, (i + 1) * 128);
    e.writeUInt32LE(0xffffffff, 0x44);
    e.writeUInt32LE(0xffffffff, 0x48);
    e.writeUInt32LE(0xffffffff, 0x4c);
  }
  return Buffer.concat([header, fat, dir, Buffer.alloc(8 * SECTOR, 0x11)]);
}

export const doc = () => cfb('WordDocument');
export const xls = () => cfb('Workbook');
export const ppt = () => cfb('PowerPoint Document');

export const b64 = (b: Buffer) => b.toString('base64');
