/**
 * The media types we accept and their ceilings, in one table.
 *
 * Policy: a type is named by its canonical MIME (lower case, no parameters); the few spellings
 * clients and tools use for the same thing are aliases (`image/jpg` → `image/jpeg`, `audio/x-m4a`
 * → `audio/mp4`). Template header samples take the spec's per-format lists (IMAGE jpeg/png 5 MB;
 * VIDEO mp4/3gpp 16 MB; DOCUMENT PDF, Word, Excel, PowerPoint, plain text 100 MB); media assets take
 * WhatsApp's media limits (image 5 MB, video 16 MB, audio 16 MB, document 100 MB). Inline base64
 * data is at most 5 MB decoded whatever the format.
 */
export const MB = 1024 * 1024;
export const INLINE_MAX_BYTES = 5 * MB;
/** Bytes file-type needs to recognise most signatures. */
export const SNIFF_BYTES = 4100;

export type MediaKind = 'image' | 'video' | 'audio' | 'document';
export type HeaderFormat = 'IMAGE' | 'VIDEO' | 'DOCUMENT';

export const PDF = 'application/pdf';
export const DOC = 'application/msword';
export const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
export const XLS = 'application/vnd.ms-excel';
export const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const PPT = 'application/vnd.ms-powerpoint';
export const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';
export const TEXT = 'text/plain';

export interface TypeRule {
  types: readonly string[];
  maxBytes: number;
}

export const KIND_RULES: Record<MediaKind, TypeRule> = {
  image: { types: ['image/jpeg', 'image/png'], maxBytes: 5 * MB },
  video: { types: ['video/mp4', 'video/3gpp'], maxBytes: 16 * MB },
  audio: { types: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'], maxBytes: 16 * MB },
  document: { types: [PDF, DOC, DOCX, XLS, XLSX, PPT, PPTX, TEXT], maxBytes: 100 * MB },
};

export const HEADER_RULES: Record<HeaderFormat, TypeRule> = {
  IMAGE: KIND_RULES.image,
  VIDEO: KIND_RULES.video,
  DOCUMENT: KIND_RULES.document,
};

/** Every type a media asset may have. */
export const MEDIA_TYPES: readonly string[] = Object.values(KIND_RULES).flatMap((r) => r.types);
/** The largest media asset of any kind. */
export const MEDIA_MAX_BYTES = Math.max(...Object.values(KIND_RULES).map((r) => r.maxBytes));

const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'audio/x-m4a': 'audio/mp4',
  'audio/m4a': 'audio/mp4',
  'audio/mp3': 'audio/mpeg',
  'audio/opus': 'audio/ogg',
  'video/3gp': 'video/3gpp',
};

/** Types that claim nothing about the content. */
const GENERIC = new Set(['application/octet-stream', 'binary/octet-stream', 'application/unknown', 'application/binary']);

/** Canonical form of a declared type: lower case, parameters dropped, aliases resolved. */
export function normalizeMime(raw: string | undefined | null): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const base = raw.split(';')[0].trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(base)) return undefined;
  return ALIASES[base] ?? base;
}

/** True when a declared type says nothing about the content (absent or octet-stream). */
export function isGenericMime(mime: string | undefined): boolean {
  return mime === undefined || GENERIC.has(mime);
}

export function kindOf(mime: string): MediaKind | undefined {
  for (const [kind, rule] of Object.entries(KIND_RULES) as [MediaKind, TypeRule][]) {
    if (rule.types.includes(mime)) return kind;
  }
  return undefined;
}

const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg', 'image/png': 'png', 'video/mp4': 'mp4', 'video/3gpp': '3gp',
  'audio/aac': 'aac', 'audio/amr': 'amr', 'audio/mpeg': 'mp3', 'audio/mp4': 'm4a', 'audio/ogg': 'ogg',
  [PDF]: 'pdf', [DOC]: 'doc', [DOCX]: 'docx', [XLS]: 'xls', [XLSX]: 'xlsx', [PPT]: 'ppt', [PPTX]: 'pptx', [TEXT]: 'txt',
};

export function extensionOf(mime: string): string {
  return EXTENSIONS[mime] ?? 'bin';
}

/**
 * A file name safe to store and to pass on: the last path component, control characters and
 * quotes removed, at most 255 characters; `fallback` when nothing is left.
 */
export function cleanFilename(raw: string | undefined | null, fallback: string): string {
  const last = String(raw ?? '').split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = last.replace(/[\u0000-\u001f\u007f"]/g, '').trim().slice(0, 255);
  return clean && clean !== '.' && clean !== '..' ? clean : fallback;
}
