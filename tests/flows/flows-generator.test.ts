/**
 * The deterministic generator without HTTP: every field type, every generatable version, the
 * largest descriptions the contract allows, all give flows the validator accepts; the same
 * description gives the same bytes; contradictions are named.
 */
import { describe, expect, it } from '@jest/globals';
import { buildFlow, checkDescription, type FlowDescription } from '../../lib/flows/generator.js';
import { ACTIVE_VERSIONS, renderFlow, validateFlowJson } from '../../lib/flows/validator/index.js';

const everyType: FlowDescription = {
  screens: [
    {
      title: 'Everything',
      text: 'All field types.',
      fields: [
        { name: 'a_text', label: 'Text', type: 'text', required: true, helper_text: 'As on your ID' },
        { name: 'a_email', label: 'Email', type: 'email' },
        { name: 'a_phone', label: 'Phone', type: 'phone' },
        { name: 'a_number', label: 'Number', type: 'number' },
        { name: 'a_password', label: 'Password', type: 'password' },
        { name: 'a_paragraph', label: 'Paragraph', type: 'paragraph', helper_text: 'A few words' },
        { name: 'a_date', label: 'Date', type: 'date', helper_text: 'When' },
        { name: 'a_single', label: 'Single', type: 'single_choice', choices: ['One', 'Two'] },
        { name: 'a_multi', label: 'Multi', type: 'multiple_choice', choices: ['One', 'Two', 'Three'] },
        { name: 'a_dropdown', label: 'Dropdown', type: 'dropdown', choices: Array.from({ length: 200 }, (_, i) => `Option ${i}`) },
        { name: 'a_opt_in', label: 'I agree to the terms and to be contacted about my answers', type: 'opt_in', required: true },
      ],
    },
    { title: 'Then', fields: [{ name: 'b_text', label: 'More', type: 'text' }] },
  ],
  final_action: { type: 'complete', label: 'Done' },
};

describe('buildFlow', () => {
  it.each(ACTIVE_VERSIONS.map((v) => [v]))('When every field type is generated in version %s, then the flow validates without findings', (version) => {
    expect(checkDescription(everyType, version)).toEqual([]);
    const r = validateFlowJson(buildFlow(everyType, version));
    expect(r.findings).toEqual([]);
  });

  it('When the description is as large as the contract allows (20 screens of 40 fields), then the flow validates', () => {
    const d: FlowDescription = {
      screens: Array.from({ length: 20 }, (_, s) => ({
        title: `Screen ${s}`,
        fields: Array.from({ length: 40 }, (_, f) => ({ name: `f_${s}_${f}`, label: `Field ${f}`, type: f % 2 ? 'text' : 'single_choice', ...(f % 2 ? {} : { choices: ['Yes', 'No'] }) }) as const),
      })),
    };
    expect(checkDescription(d, '7.3')).toEqual([]);
    const flow = buildFlow(d) as { screens: { id: string; data?: object }[] };
    expect(validateFlowJson(flow).findings).toEqual([]);
    // Same titles but the digits: ids stay unique with letter suffixes.
    expect(new Set(flow.screens.map((s) => s.id)).size).toBe(20);
    expect(Object.keys(flow.screens[19].data!)).toHaveLength(19 * 40);
  });

  it('When the same description is built twice, then the bytes are the same', () => {
    expect(renderFlow(buildFlow(everyType))).toBe(renderFlow(buildFlow(structuredClone(everyType))));
  });

  it('When titles make no usable id or the reserved one, then ids are still valid', () => {
    const d: FlowDescription = { screens: [{ title: '123', fields: [{ name: 'a', label: 'A', type: 'text' }] }, { title: 'Success', fields: [{ name: 'b', label: 'B', type: 'text' }] }, { title: '!!!' }] };
    const flow = buildFlow(d) as { screens: { id: string }[] };
    expect(flow.screens.map((s) => s.id)).toEqual(['SCREEN', 'SUCCESS_SCREEN', 'SCREEN_A']);
    expect(validateFlowJson(flow).valid).toBe(true);
  });
});

describe('checkDescription', () => {
  it('When a helper text is given to a field whose component has none, then it is named', () => {
    const d: FlowDescription = { screens: [{ title: 'Q', fields: [{ name: 'a', label: 'Pick', type: 'single_choice', choices: ['x'], helper_text: 'Help' }] }] };
    expect(checkDescription(d, '7.3')).toEqual([{ field: 'description.screens[0].fields[0].helper_text', message: expect.stringContaining('no helper text') }]);
  });

  it('When the version cannot be generated, then it is named', () => {
    expect(checkDescription(everyType, '4.0')[0].field).toBe('version');
  });
});
