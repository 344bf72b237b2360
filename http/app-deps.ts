/** What the HTTP edge is built from: the domain's dependencies plus the contracts it serves. */
import type { Deps } from '../lib/deps.js';
import type { Contract } from './contract.js';
import type { ResponseViolation } from './contract-checks/response-check.js';

export interface AppDeps extends Deps {
  /** The public /v1 contract (openapi.yaml). */
  contract: Contract;
  /** The operator contract (admin-openapi.yaml). */
  adminContract: Contract;
  /** The bot's runtime contract (runtime-openapi.yaml). */
  runtimeContract: Contract;
  /**
   * Check each contract against the OpenAPI schema as the app is built (default on). Test apps that
   * serve the shipped contracts turn it off: tests/contract/contract-schema.test.ts checks those
   * once, where every test file would compile the OpenAPI schema again.
   */
  checkContracts?: boolean;
  /** Validate responses against the contract (on in tests). */
  validateResponses: boolean;
  /** Told of every response that breaks the contract (config.responseCheckSample of them are checked). */
  onResponseViolation?: (violations: ResponseViolation[]) => void;
  /** The Cloud API simulator's URL when it is the channel (never with GRAPH_BASE_URL): template decisions outside production. */
  simulatorUrl?: string;
}
