/** The house's import rules (scripts/check-imports.ts): the real tree follows them, and each rule catches its mistake. */
import { describe, expect, it } from '@jest/globals';
import { checkImports, checkRules } from '../scripts/check-imports.js';

const graph = (edges: Record<string, { local?: string[]; packages?: string[] }>) =>
  new Map(Object.entries(edges).map(([f, e]) => [f, { local: e.local ?? [], packages: e.packages ?? [] }]));

describe('import rules', () => {
  it('hold for the project as it is', () => {
    expect(checkImports(process.cwd())).toEqual([]);
  });

  it('refuse a domain module that imports Express, middleware, handlers or the http edge', () => {
    const v = checkRules(
      graph({
        'lib/messaging/a.ts': { packages: ['express'] },
        'lib/messaging/b.ts': { local: ['middleware/project.ts', 'handlers/messages.ts', 'http/contract.ts'] },
        'middleware/project.ts': {},
        'handlers/messages.ts': {},
        'http/contract.ts': {},
      }),
    );
    expect(v.map((x) => x.file)).toEqual(['lib/messaging/a.ts', 'lib/messaging/b.ts', 'lib/messaging/b.ts', 'lib/messaging/b.ts']);
    expect(v[0].message).toMatch(/imports Express/);
    expect(v[1].message).toMatch(/HTTP edge \(middleware\/project.ts\)/);
  });

  it('refuse the platform importing a capability, and the channel importing the domain', () => {
    const v = checkRules(graph({ 'lib/platform/x.ts': { local: ['lib/messaging/y.ts'] }, 'lib/messaging/y.ts': {}, 'channel/c.ts': { local: ['lib/messaging/y.ts'] } }));
    expect(v.map((x) => x.message)).toEqual([
      'lib/platform imports a capability (lib/messaging/y.ts): the floor depends on nothing above it',
      'channel/ is a leaf over lib/platform but imports lib/messaging/y.ts',
    ]);
  });

  it('name every circle with its members', () => {
    const v = checkRules(graph({ 'http/a.ts': { local: ['http/b.ts'] }, 'http/b.ts': { local: ['middleware/c.ts'] }, 'middleware/c.ts': { local: ['http/a.ts'] }, 'http/d.ts': { local: ['http/a.ts'] } }));
    expect(v).toEqual([{ file: 'http/a.ts', message: 'imports run in a circle: http/a.ts ↔ http/b.ts ↔ middleware/c.ts' }]);
  });
});
