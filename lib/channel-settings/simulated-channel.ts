/**
 * The embedded default connects each new project to a number of the bundled Cloud API simulator,
 * so a new user can send and receive at once, without a Meta account.
 */
import type { Deps } from '../deps.js';
import { randomToken } from '../platform/secrets.js';
import { saveChannel, webhookUrl } from './settings.js';

export function simulatedChannelProvisioner(deps: Pick<Deps, 'db' | 'secretBox' | 'logger'>, simulatorUrl: string, callbackBaseUrl: string) {
  return async (projectId: string): Promise<void> => {
    const appSecret = randomToken(32);
    const verifyToken = randomToken(24);
    const res = await fetch(`${simulatorUrl}/_sim/phone-numbers`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ callback_url: webhookUrl(callbackBaseUrl, projectId), app_secret: appSecret, verify_token: verifyToken }),
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) throw new Error(`simulator refused a phone number: HTTP ${res.status}`);
    const n = (await res.json()) as { phone_number_id: string; waba_id: string; app_id: string; access_token: string; display_phone_number?: string };
    await saveChannel(deps, projectId, {
      phoneNumberId: n.phone_number_id,
      wabaId: n.waba_id,
      appId: n.app_id,
      accessToken: n.access_token,
      appSecret,
      verifyToken,
      displayPhoneNumber: n.display_phone_number,
    });
    deps.logger.info('project connected to a simulated WhatsApp number', { project_id: projectId, phone_number_id: n.phone_number_id });
  };
}
