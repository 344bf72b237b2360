/** Message templates (/{waba-id}/message_templates): create, list, delete. */
import type { ChannelCredentials, GraphTransport } from './graph-transport.js';
import type { ChannelTemplate, CreateTemplateInput, CreateTemplateResult, ListTemplatesInput, TemplateDefinitionComponent } from '../lib/channel-port/port.js';

// ---------------------------------------------------------------------------------------------
// Templates

export type { CreateTemplateInput, CreateTemplateResult, ListTemplatesInput };
/** The Graph names of the port's template shapes. */
export type GraphTemplateDefinitionComponent = TemplateDefinitionComponent;
export type GraphTemplate = ChannelTemplate;

const TEMPLATE_FIELDS = 'id,name,language,status,category,components,rejected_reason,parameter_format';

/** POST /{version}/{wabaId}/message_templates */
export async function createTemplate(this: GraphTransport, creds: ChannelCredentials, input: CreateTemplateInput): Promise<CreateTemplateResult> {
  const data: Record<string, unknown> = { name: input.name, language: input.language, category: input.category, components: input.components };
  if (input.parameter_format !== undefined) data.parameter_format = input.parameter_format;
  if (input.allow_category_change !== undefined) data.allow_category_change = input.allow_category_change;
  const b = (await this.call(creds, { op: 'createTemplate', method: 'POST', segments: [creds.wabaId, 'message_templates'], data })) as Record<string, unknown>;
  const id = typeof b?.id === 'string' ? b.id : typeof b?.id === 'number' ? String(b.id) : undefined;
  if (!id) throw this.unexpected('createTemplate', 'no template id in the answer');
  return { id, status: typeof b.status === 'string' ? b.status : 'PENDING', category: typeof b.category === 'string' ? b.category : String(input.category) };
}

/** GET /{version}/{wabaId}/message_templates, following pages up to `limit` templates. */
export async function listTemplates(this: GraphTransport, creds: ChannelCredentials, input: ListTemplatesInput = {}): Promise<GraphTemplate[]> {
  const limit = Math.min(Math.max(Math.floor(input.limit ?? 100), 1), 5000);
  const out: GraphTemplate[] = [];
  let after: string | undefined;
  for (let page = 0; page < 100 && out.length < limit; page++) {
    const b = (await this.call(creds, {
      op: 'listTemplates',
      method: 'GET',
      segments: [creds.wabaId, 'message_templates'],
      params: { fields: TEMPLATE_FIELDS, limit: Math.min(limit - out.length, 100), name: input.name, status: input.status, language: input.language, after },
    })) as { data?: unknown; paging?: { next?: unknown; cursors?: { after?: unknown } } };
    if (!Array.isArray(b?.data)) throw this.unexpected('listTemplates', 'no data array in the answer');
    for (const t of b.data as Record<string, unknown>[]) {
      if (t && typeof t === 'object' && (typeof t.id === 'string' || typeof t.id === 'number')) out.push({ ...t, id: String(t.id) } as GraphTemplate);
    }
    const next = b.paging?.cursors?.after;
    if (!b.paging?.next || typeof next !== 'string' || !next || b.data.length === 0) break;
    after = next;
  }
  return out.slice(0, limit);
}

/** DELETE /{version}/{wabaId}/message_templates?name=…[&hsm_id=…] (all languages, or the one id). */
export async function deleteTemplate(this: GraphTransport, creds: ChannelCredentials, input: { name: string; hsmId?: string }): Promise<void> {
  if (typeof input?.name !== 'string' || !input.name) throw new TypeError('CloudApiClient: deleteTemplate needs a name');
  await this.call(creds, {
    op: 'deleteTemplate',
    method: 'DELETE',
    segments: [creds.wabaId, 'message_templates'],
    params: { name: input.name, hsm_id: input.hsmId },
  });
}
