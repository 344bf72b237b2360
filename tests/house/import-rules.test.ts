/** The house's import rules (scripts/check-imports.ts): the real tree follows them, and each rule catches its mistake. */
import { describe, expect, it } from '@jest/globals';
import { checkImports, checkRules, edgeDatabaseCalls } from '../../scripts/check-imports.js';

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
      'channel/ is a leaf over lib/platform and the port (lib/channel-port) but imports lib/messaging/y.ts',
    ]);
  });

  it('refuse the domain importing the channel\'s adapter, and let the adapter import the port', () => {
    const v = checkRules(graph({
      'lib/messaging/y.ts': { local: ['channel/errors.ts', 'lib/channel-port/errors.ts'] },
      'lib/deps.ts': { local: ['channel/cloud-api.ts'] },
      'lib/channel-port/errors.ts': {},
      'channel/errors.ts': { local: ['lib/channel-port/errors.ts'] },
      'channel/cloud-api.ts': {},
    }));
    expect(v.map((x) => `${x.file}: ${x.message}`)).toEqual([
      'lib/messaging/y.ts: the domain imports the channel\'s adapter (channel/errors.ts): use the port (lib/channel-port/) and Deps.channel',
      'lib/deps.ts: the domain imports the channel\'s adapter (channel/cloud-api.ts): use the port (lib/channel-port/) and Deps.channel',
    ]);
  });

  it('refuse the HTTP edge reaching the database other than through the domain', () => {
    const v = checkRules(
      graph({
        'handlers/a.ts': { packages: ['pg'], local: ['lib/platform/db/transaction.ts', 'lib/platform/db/errors.ts'] },
        'middleware/b.ts': { packages: ['@prisma/client'], local: ['generated/prisma/client.ts'] },
        'lib/platform/db/transaction.ts': {},
        'lib/platform/db/errors.ts': {},
      }),
    );
    expect(v.map((x) => `${x.file}: ${x.message}`)).toEqual([
      'handlers/a.ts: the HTTP edge imports the database driver (pg): go through the domain',
      'handlers/a.ts: the HTTP edge imports the database layer (lib/platform/db/transaction.ts): go through the domain',
      'middleware/b.ts: the HTTP edge imports the database driver (@prisma/client): go through the domain',
      'middleware/b.ts: the HTTP edge imports the database layer (generated/prisma/client.ts): go through the domain',
    ]);
    expect(edgeDatabaseCalls('handlers/x.ts', "const r = await deps.db.pool.query('SELECT 1');")).toHaveLength(1);
    expect(edgeDatabaseCalls('handlers/admin/x.ts', 'await deps.db.prisma.flow.findMany({});')[0].message).toMatch(/queries the database itself \(\.prisma\.…\)/);
    expect(edgeDatabaseCalls('http/x.ts', '// an example: pool.query(sql)\nconst a = 1;')).toEqual([]);
    expect(edgeDatabaseCalls('lib/messaging/x.ts', "await db.query('SELECT 1');")).toEqual([]);
  });

  it('name every circle with its members', () => {
    const v = checkRules(graph({ 'http/a.ts': { local: ['http/b.ts'] }, 'http/b.ts': { local: ['middleware/c.ts'] }, 'middleware/c.ts': { local: ['http/a.ts'] }, 'http/d.ts': { local: ['http/a.ts'] } }));
    expect(v).toEqual([{ file: 'http/a.ts', message: 'imports run in a circle: http/a.ts ↔ http/b.ts ↔ middleware/c.ts' }]);
  });

  it('refuse a capability importing another along an undeclared edge, naming an edge that would run both ways', () => {
    const v = checkRules(
      graph({
        'lib/conversations/a.ts': { local: ['lib/messaging/send-message.ts', 'lib/platform/errors.ts', 'lib/deps.ts'] },
        'lib/messaging/send-message.ts': { local: ['lib/conversations/a.ts'] },
        'lib/newroom/x.ts': { local: ['lib/platform/errors.ts'] },
        'lib/platform/errors.ts': {},
        'lib/deps.ts': {},
      }),
    ).filter((x) => !x.message.startsWith('imports run in a circle'));
    expect(v.map((x) => x.message)).toEqual([
      'lib/conversations/ may not import lib/messaging/ (lib/messaging/send-message.ts) (lib/messaging/ imports lib/conversations/: the edge would run both ways): declare the edge in CAPABILITY_EDGES, or move the shared part down',
      'lib/newroom/ is not declared in CAPABILITY_EDGES (scripts/check-imports.ts): declare the room and what it may import',
    ]);
  });
});
