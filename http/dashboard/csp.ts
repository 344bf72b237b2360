/**
 * The dashboard pages' Content-Security-Policy: only this service's own CSS and script; no inline
 * script runs; no framing. connect-src 'self': a live page (the inbox, a campaign, the bot log)
 * reads its own event stream (live-stream.ts). media-src 'self': the inbox plays a conversation's video and audio through the service. form-action 'self': the OAuth consent page adds the client's origin, where its answer redirects.
 */
export const CSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
