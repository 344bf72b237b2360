/** The operator CLI (`npm run ops`) run in process against a test's service, its output captured. */
import { main } from '../../scripts/ops/main.js';

export async function runOps(serviceUrl: string, adminToken: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { SERVICE_URL: serviceUrl, ADMIN_TOKEN: adminToken }, { out: (s) => void (stdout += s + '\n'), err: (s) => void (stderr += s + '\n') });
  return { code, stdout, stderr };
}
