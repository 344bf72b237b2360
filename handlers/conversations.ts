/** Conversations. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { ApiError } from '../lib/errors.js';

const todo = async (): Promise<never> => {
  throw new ApiError('server_error', 'not implemented yet');
};
export const listConversations: Handler<operations['listConversations']> = todo;
export const getConversation: Handler<operations['getConversation']> = todo;
export const updateConversationState: Handler<operations['updateConversationState']> = todo;
export const listConversationMessages: Handler<operations['listConversationMessages']> = todo;
