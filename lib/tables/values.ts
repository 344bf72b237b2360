/**
 * How column values are returned as JSON: booleans, 16/32-bit integers and finite floats as
 * numbers, json and jsonb as JSON, everything else (bigint, numeric, dates and times, uuid, arrays…)
 * as PostgreSQL's own text form: exact, and accepted back as a filter value. Timestamps are in UTC.
 */
import pg from 'pg';

const OID = { bool: 16, int2: 21, int4: 23, float4: 700, float8: 701, json: 114, jsonb: 3802 };

function parseFloatSafe(v: string): number | string {
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}

export const rowTypes = {
  getTypeParser(oid: number): (v: string) => unknown {
    switch (oid) {
      case OID.bool:
        return (v) => v === 't';
      case OID.int2:
      case OID.int4:
        return (v) => Number(v);
      case OID.float4:
      case OID.float8:
        return parseFloatSafe;
      case OID.json:
      case OID.jsonb:
        return (v) => JSON.parse(v);
      default:
        return (v) => v;
    }
  },
} as unknown as pg.CustomTypesConfig;
