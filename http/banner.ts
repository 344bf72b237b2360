/**
 * What `npm start` prints once it is ready: where each part is (the API and its contract, the
 * reference page, the dashboard, the simulator or the real channel), how the operator CLI finds
 * this service (SERVICE_URL, which it defaults to port 3000), the operator token when it was just
 * generated, and a warning while a development-only setting is on.
 */
import type { Config } from '../lib/platform/config.js';

/** The operator CLI's default target (scripts/ops/help.ts DEFAULT_URL). */
export const CLI_DEFAULT_URL = 'http://localhost:3000';

export interface BannerInput {
  base: string;
  port: number;
  config: Pick<Config, 'simulatorUrl' | 'graphBaseUrl' | 'adminToken' | 'devAllowPrivateTargets' | 'simulatorPort'>;
  simulatorUrl?: string;
  admin: { token: string; created: boolean };
  tokenFile: string;
}

export function startupBanner(b: BannerInput): string {
  const { base, config } = b;
  const lines = [
    '',
    `Service API listening on ${base}  (contract: ${base}/v1/openapi.json)`,
    `  API reference  ${base}/docs`,
    `  Dashboard      ${base}/dashboard  (first owner of a project: npm run ops -- dashboard grant <projectId> <email>)`,
  ];
  if (b.simulatorUrl) {
    const which = config.simulatorUrl ? 'standalone, SIMULATOR_URL' : `bundled, SIMULATOR_PORT=${config.simulatorPort}`;
    lines.push(`WhatsApp Cloud API simulator on ${b.simulatorUrl}  (${which}; new projects get a simulated number; control API: ${b.simulatorUrl}/_sim)`);
  } else if (config.graphBaseUrl) {
    lines.push(`WhatsApp Cloud API: ${config.graphBaseUrl}  (GRAPH_BASE_URL)`);
  }
  lines.push(
    base === CLI_DEFAULT_URL
      ? `Operator CLI: npm run ops -- --help  (it calls SERVICE_URL, default ${CLI_DEFAULT_URL}: this service)`
      : `Operator CLI: export SERVICE_URL=${base}  (the CLI's default is ${CLI_DEFAULT_URL}), then npm run ops -- --help`,
  );
  // The operator token is shown once, when it is generated; afterwards only where it is kept.
  if (b.admin.created) lines.push(`ADMIN_TOKEN=${b.admin.token}  (generated now; kept in ${b.tokenFile})`);
  else if (!config.adminToken) lines.push(`Operator token: export ADMIN_TOKEN=$(cat ${b.tokenFile})`);
  if (config.devAllowPrivateTargets) {
    lines.push(
      'WARNING: DEV_ALLOW_PRIVATE_TARGETS is on: webhooks and URL downloads may reach private and loopback addresses',
      '         (plain http to localhost included). For local development and tests only; never in production.',
    );
  }
  return lines.join('\n') + '\n';
}
