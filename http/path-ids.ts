/** Path ids, checked once: the contract's pattern holds them, this is the second line. */
import { ApiError } from '../lib/platform/errors.js';

/** A numeric path id (`^[1-9][0-9]{0,17}$`, so it fits a bigint); anything else is 400 `invalid_id`. */
export function positiveId(raw: string): bigint {
  if (!/^[1-9][0-9]{0,17}$/.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw}": a positive integer is expected.`);
  return BigInt(raw);
}
