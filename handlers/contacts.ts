/** Contacts. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { ApiError } from '../lib/errors.js';

const todo = async (): Promise<never> => {
  throw new ApiError('server_error', 'not implemented yet');
};
export const listContacts: Handler<operations['listContacts']> = todo;
export const getContact: Handler<operations['getContact']> = todo;
export const updateContact: Handler<operations['updateContact']> = todo;
