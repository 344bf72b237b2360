/**
 * The README's house cannot drift (issue 57): its domain floor is what CAPABILITY_EDGES and the
 * rooms of lib/ say (scripts/house.ts draws it; `npm run generate` writes it).
 */
import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { domainLines, houseProblems, redrawn } from '../../scripts/house.js';
import { CAPABILITY_EDGES } from '../../scripts/check-imports.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe("the README's house", () => {
  it('When the README is read, then its domain floor is the one drawn from CAPABILITY_EDGES and every room of lib/ has a summary', () => {
    expect(houseProblems(root)).toEqual([]);
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme).toBe(redrawn(readme));
  });

  it('When a room or an edge is added, then the drawn floor shows it (the README would be stale until regenerated)', () => {
    const before = domainLines().join('\n');
    CAPABILITY_EDGES.mcp.push('access');
    try {
      const after = domainLines().join('\n');
      expect(after).not.toBe(before);
      expect(after).toMatch(/mcp\/ +the MCP server's identity as a protected resource +→ access/);
    } finally {
      CAPABILITY_EDGES.mcp.pop();
    }
    // Every line keeps the box's width.
    for (const line of domainLines()) expect(line.length).toBe(93);
  });
});
