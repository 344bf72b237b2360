/** Segments (tag Segments): thin handlers over lib/broadcasts/segments.ts. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import * as segments from '../lib/broadcasts/segments.js';

export const createSegment: Handler<operations['createSegment']> = async (req, deps) => {
  const segment = await segments.createSegment(deps.db.sql, req.auth!.project.id, req.body.name, req.body.filter, deps.clock.now());
  return { status: 201, data: { segment } };
};

export const listSegments: Handler<operations['listSegments']> = async (req, deps) => {
  const limit = Number(req.query.limit ?? 50);
  const offset = Number(req.query.offset ?? 0);
  const page = await segments.listSegments(deps.db.sql, req.auth!.project.id, limit, offset);
  return { data: { ...page, limit, offset } };
};

export const getSegment: Handler<operations['getSegment']> = async (req, deps) => ({
  data: { segment: await segments.getSegment(deps.db.sql, req.auth!.project.id, segments.segmentId(req.params.id)) },
});

export const updateSegment: Handler<operations['updateSegment']> = async (req, deps) => ({
  data: { segment: await segments.updateSegment(deps.db.sql, req.auth!.project.id, segments.segmentId(req.params.id), req.body, deps.clock.now()) },
});

export const deleteSegment: Handler<operations['deleteSegment']> = async (req, deps) => {
  await segments.deleteSegment(deps.db.sql, req.auth!.project.id, segments.segmentId(req.params.id));
  return { data: { deleted: true } };
};
