/**
 * The spec's error codes and their HTTP statuses, in one table. Handlers and middleware throw
 * `ApiError`; one error middleware writes the envelope `{ success: false, error, request_id }`.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  invalid_request: 400,
  invalid_json: 400,
  invalid_id: 400,
  invalid_cursor: 400,
  invalid_idempotency_key: 400,
  invalid_project_header: 400,
  project_required: 400,
  invalid_template: 400,
  invalid_header_handle: 400,
  invalid_media_id: 400,
  empty_file: 400,
  source_url_forbidden: 400,
  download_failed: 400,
  invalid_phone: 400,
  missing_recipient: 400,
  conflicting_recipient: 400,
  invalid_user_id: 400,
  recipient_requires_phone: 400,
  missing_template_name: 400,
  missing_language: 400,
  template_variable_mismatch: 400,
  unsupported_message_type: 400,
  too_many_buttons: 400,
  invalid_webhook_url: 400,
  webhook_target_forbidden: 400,
  invalid_event_list: 400,
  invalid_event_name: 400,
  duplicate_event: 400,
  reserved_event_name: 400,
  null_filter_value: 400,
  unknown_column: 400,
  invalid_value: 400,
  empty_audience: 400,
  marketing_template_required: 400,
  invalid_csv: 400,
  invalid_path: 400,
  invalid_flow: 400,
  api_key_required: 401,
  invalid_api_key: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  project_inactive: 403,
  project_not_attached: 403,
  no_project_access: 403,
  protected_file: 403,
  flow_file_forbidden: 403,
  platform_table_forbidden: 403,
  not_found: 404,
  table_not_found: 404,
  method_not_allowed: 405,
  outside_24h_window: 409,
  recipient_opted_out: 409,
  template_exists: 409,
  idempotency_in_progress: 409,
  idempotency_key_mismatch: 409,
  conflict: 409,
  channel_not_configured: 409,
  webhook_limit_reached: 409,
  max_affected_exceeded: 409,
  table_quota_exceeded: 409,
  precondition_failed: 412,
  file_too_large: 413,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  quota_exceeded: 429,
  server_error: 500,
  query_timeout: 503,
  service_unavailable: 503,
  upstream_error: 502,
  upstream_auth_error: 502,
  build_failed: 502,
  flow_generation_failed: 502,
  flow_update_failed: 502,
  // Upper-case codes of the shared capability layer.
  INVALID_STATE: 400,
  PROJECT_NOT_FOUND: 404,
  SEGMENT_NOT_FOUND: 404,
  MEDIA_EXPIRED: 410,
  BROADCAST_NOT_FOUND: 404,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}
