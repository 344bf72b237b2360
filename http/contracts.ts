/** The contracts shipped at the project root: public (/v1), operator (/admin), runtime (/runtime). */
import path from 'node:path';
import { PROJECT_ROOT } from '../lib/platform/project-root.js';
import { loadContract, type Contract } from './contract.js';

/** Each shipped contract's file and how it is checked (tests load the same: tests/support/contracts.ts). */
export const SHIPPED_CONTRACTS = {
  public: { file: 'openapi.yaml', requireScopes: true },
  admin: { file: 'admin-openapi.yaml', requireScopes: false },
  runtime: { file: 'runtime-openapi.yaml', requireScopes: false },
} as const;

const load = ({ file, requireScopes }: { file: string; requireScopes: boolean }): Contract => loadContract(path.join(PROJECT_ROOT, file), { requireScopes });

export function loadPublicContract(): Contract {
  return load(SHIPPED_CONTRACTS.public);
}

export function loadAdminContract(): Contract {
  return load(SHIPPED_CONTRACTS.admin);
}

export function loadRuntimeContract(): Contract {
  return load(SHIPPED_CONTRACTS.runtime);
}
