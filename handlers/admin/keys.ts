/** Operator API: project API keys (the rules: lib/access/keys.ts). The secret is returned once, by create and rotate. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import * as keys from '../../lib/access/keys.js';
import { keyView } from './serialize.js';

type Ops = operations;

export const adminListKeys: Handler<Ops['adminListKeys']> = async (req, deps) => ({
  data: { keys: (await keys.listKeys(deps, req.params.projectId)).map(keyView) },
});

export const adminCreateKey: Handler<Ops['adminCreateKey']> = async (req, deps) => {
  const { key, secret } = await keys.createKey(deps, req.params.projectId, req.body);
  return { status: 201, data: { key: keyView(key), secret } };
};

export const adminGetKey: Handler<Ops['adminGetKey']> = async (req, deps) => ({
  data: { key: keyView(await keys.findKey(deps, req.params.keyId)) },
});

export const adminUpdateKey: Handler<Ops['adminUpdateKey']> = async (req, deps) => ({
  data: { key: keyView(await keys.updateKey(deps, req.params.keyId, req.body)) },
});

export const adminRotateKey: Handler<Ops['adminRotateKey']> = async (req, deps) => {
  const { key, secret } = await keys.rotateKey(deps, req.params.keyId);
  return { data: { key: keyView(key), secret } };
};

export const adminRevokeKey: Handler<Ops['adminRevokeKey']> = async (req, deps) => ({
  data: { key: keyView(await keys.revokeKey(deps, req.params.keyId)) },
});
