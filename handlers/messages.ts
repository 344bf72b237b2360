/** Messages: sending (lib/messaging/send-message.ts) and reading one with its delivery status. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { ApiError } from '../lib/errors.js';

export const sendMessage: Handler<operations['sendMessage']> = async () => {
  throw new ApiError('server_error', 'not implemented yet');
};

export const getMessage: Handler<operations['getMessage']> = async () => {
  throw new ApiError('server_error', 'not implemented yet');
};
