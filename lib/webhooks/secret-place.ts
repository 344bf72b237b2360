/** Where a registration's signing secret is stored: its sealed value is bound to it (lib/platform/crypto-box.ts). */
export function webhookSecretPlace(webhookId: string): string {
  return `webhook_endpoints:${webhookId}:secret_enc`;
}
