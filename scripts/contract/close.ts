/**
 * `npm run contract:close [file…]`: closes every open object schema the service sends (the ones
 * the Spectral rule `closed-responses` reports), in place, by inserting `additionalProperties:
 * false` (or `unevaluatedProperties: false` on an allOf composition) into the YAML text. Only
 * those lines change: comments, quoting and flow style are kept. Default files: openapi.yaml and
 * admin-openapi.yaml. Findings without a mechanical fix are printed and make it exit 1.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isPair, isScalar, isSeq, parseDocument, type Document, type Node, type YAMLMap } from 'yaml';
import { findOpenSchemas } from '../../spectral-functions/closed-responses.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function nodeAt(doc: Document, segments: Array<string | number>): Node | undefined {
  let node: unknown = doc.contents;
  for (const segment of segments) {
    if (isMap(node)) {
      node = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment))?.value;
    } else if (isSeq(node)) {
      node = node.items[Number(segment)];
    } else {
      return undefined;
    }
  }
  return node as Node | undefined;
}

interface Edit {
  at: number;
  text: string;
}

/** The text that adds `keyword: false` to this map, where it reads naturally (after `type`). */
function insertion(source: string, map: YAMLMap, keyword: string): Edit {
  const [start, , end] = map.range!;
  if (map.flow) {
    const close = source.lastIndexOf('}', end);
    let at = close;
    while (at > start && /\s/.test(source[at - 1])) at--;
    const empty = map.items.length === 0;
    return { at, text: empty ? ` ${keyword}: false ` : `, ${keyword}: false` };
  }
  const first = map.items[0];
  const keyStart = (first.key as Node).range![0];
  const indent = keyStart - (source.lastIndexOf('\n', keyStart - 1) + 1);
  // After a one-line `type: object` when there is one, else before the first key.
  const typePair = map.items.find((p) => isScalar(p.key) && p.key.value === 'type');
  const typeKey = typePair?.key as Node | undefined;
  const typeValue = typePair?.value as Node | undefined;
  if (typeKey?.range && isScalar(typeValue) && typeValue.range && !source.slice(typeKey.range[0], typeValue.range[1]).includes('\n')) {
    const lineEnd = source.indexOf('\n', typeValue.range[1]);
    if (lineEnd >= 0) return { at: lineEnd + 1, text: `${' '.repeat(indent)}${keyword}: false\n` };
  }
  return { at: keyStart, text: `${keyword}: false\n${' '.repeat(indent)}` };
}

/** Returns the closed text and what could not be closed mechanically. */
export function closeContractText(source: string): { text: string; closed: string[]; unfixable: string[] } {
  const doc = parseDocument(source, { keepSourceTokens: false });
  const findings = findOpenSchemas(doc.toJS());
  const edits: Edit[] = [];
  const closed: string[] = [];
  const unfixable: string[] = [];
  for (const finding of findings) {
    const node = finding.keyword ? nodeAt(doc, finding.path) : undefined;
    if (!finding.keyword || !isMap(node) || !node.range) {
      unfixable.push(finding.message);
      continue;
    }
    edits.push(insertion(source, node, finding.keyword));
    closed.push(`${finding.path.join('.')}: ${finding.keyword}: false`);
  }
  let text = source;
  for (const edit of edits.sort((a, b) => b.at - a.at)) text = text.slice(0, edit.at) + edit.text + text.slice(edit.at);
  return { text, closed, unfixable };
}

function main(files: string[]): number {
  let status = 0;
  for (const file of files) {
    const full = path.resolve(root, file);
    const source = readFileSync(full, 'utf8');
    const { text, closed, unfixable } = closeContractText(source);
    if (text !== source) {
      // The result must still parse and be closed; a mistake here would corrupt the contract.
      const again = findOpenSchemas(parseDocument(text).toJS()).filter((f) => f.keyword);
      if (again.length > 0) throw new Error(`${file}: closing left ${again.length} open schema(s), e.g. ${again[0].message}`);
      writeFileSync(full, text);
    }
    console.log(`${file}: ${closed.length} schema(s) closed${closed.length ? '' : ' (already closed)'}`);
    for (const line of closed) console.log(`  ${line}`);
    for (const message of unfixable) {
      console.error(`  needs a hand edit: ${message}`);
      status = 1;
    }
  }
  if (status === 0) console.log('Next: npm run generate, then run the tests (a handler that sends an undeclared field now fails its test).');
  return status;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  process.exit(main(args.length ? args : ['openapi.yaml', 'admin-openapi.yaml']));
}
