/**
 * The tracing bootstrap, loaded before the service with `node --import` (the start script, the
 * image): when `OTEL_EXPORTER_OTLP_ENDPOINT` is set it starts the SDK (sdk.ts), which must hook
 * module loading before express, pg and the others are imported. Unset (or not an http(s) URL,
 * which the config then refuses at start, naming it), it does nothing: no SDK is loaded and no
 * loader or require hook is registered.
 */
const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
if (endpoint && /^https?:\/\/[^\s]+$/i.test(endpoint)) await import('./sdk.js');
