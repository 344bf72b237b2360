/** The contracts shipped at the project root: public (/v1), operator (/admin), runtime (/runtime). */
import path from 'node:path';
import { PROJECT_ROOT } from '../lib/platform/project-root.js';
import { loadContract, type Contract } from './contract.js';

const root = (file: string) => path.join(PROJECT_ROOT, file);

export function loadPublicContract(): Contract {
  return loadContract(root('openapi.yaml'), { requireScopes: true });
}

export function loadAdminContract(): Contract {
  return loadContract(root('admin-openapi.yaml'), { requireScopes: false });
}

export function loadRuntimeContract(): Contract {
  return loadContract(root('runtime-openapi.yaml'), { requireScopes: false });
}
