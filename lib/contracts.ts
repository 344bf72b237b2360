/** The two contracts shipped at the project root. */
import { fileURLToPath } from 'node:url';
import { loadContract, type Contract } from './contract.js';

const root = (file: string) => fileURLToPath(new URL(`../${file}`, import.meta.url));

export function loadPublicContract(): Contract {
  return loadContract(root('openapi.yaml'), { requireScopes: true });
}

export function loadAdminContract(): Contract {
  return loadContract(root('admin-openapi.yaml'), { requireScopes: false });
}
