/**
 * The README runs as pasted: its marked blocks (`<!-- readme-test: … -->` before a ```sh block:
 * the First call, a template and a broadcast), then those of the docs it links, in the order of
 * their first link (docs/bot.md: the bot walkthrough and the bot that answers from a backend), run
 * in one bash session, in order, against a service
 * started with `npm start` on the embedded defaults, as a user in a fresh clone would paste them.
 * Only what lets the test run beside another service changes: the ports, which the blocks read from
 * the variables set once at their top (SERVICE_URL, SIM_URL, SHOP_PORT: free ones here, given in the
 * shell's environment; the blocks name no port of their own), and the folders (.data/ and ../mybot →
 * folders of the test's own). Each
 * output line of a block (a comment starting with `{`, `…` or `→`) must appear in its output (`…` stands for anything). The start-up
 * banner is checked on the real start, and the time to ready is printed.
 *
 * @shared It runs the README's commands on ports and data of its own, stopping only what it started, and measures no time.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { embeddedServiceEnv, freePort, runProcess, tempFolder, type ProcessRun } from '../support/local.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let dir: string | undefined;
let npm: ChildProcess | undefined;

afterAll(async () => {
  if (npm?.pid) {
    try {
      process.kill(-npm.pid, 'SIGTERM');
      for (let i = 0; i < 100 && npm.exitCode === null; i++) await sleep(100);
      process.kill(-npm.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The README's marked blocks, in order: their commands and the output lines they promise. */
export function readmeBlocks(text: string): Array<{ name: string; script: string; expected: string[] }> {
  const out: Array<{ name: string; script: string; expected: string[] }> = [];
  const re = /<!-- readme-test: ([\w-]+) -->\n```sh\n([\s\S]*?)\n```/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const lines = m[2].split('\n');
    out.push({ name: m[1], script: m[2], expected: lines.filter((l) => /^# [{…→]/.test(l)).map((l) => l.slice(2).replace(/^→ /, '')) });
  }
  return out;
}

/** The README's blocks, then those of each doc it links (docs/<name>.md), in the order of their first link. */
export function pastedBlocks(root: string): Array<{ name: string; script: string; expected: string[] }> {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const docs = [...new Set([...readme.matchAll(/\]\((docs\/[\w.-]+\.md)(?:#[\w-]*)?\)/g)].map((m) => m[1]))];
  return [readme, ...docs.map((d) => readFileSync(path.join(root, d), 'utf8'))].flatMap(readmeBlocks);
}

const pattern = (line: string) => new RegExp(line.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*?'));

function bash(script: string, env: NodeJS.ProcessEnv): Promise<ProcessRun> {
  return runProcess('bash', ['-c', script], { cwd: root, env });
}

describe('the README as pasted', () => {
  it('When the First call, template, broadcast, bot and backend blocks (README, then docs/bot.md) are pasted into one shell after npm start, then every command succeeds and prints what the README shows', async () => {
    const blocks = pastedBlocks(root);
    expect(blocks.map((b) => b.name)).toEqual(['first-call', 'first-call', 'first-call', 'templates', 'broadcast', 'bot', 'backend', 'templates-offer', 'graph-version']);

    dir = await tempFolder('svc-readme-');
    const data = path.join(dir, 'data');
    const { env, port, simPort } = await embeddedServiceEnv(data);
    // As the README's "A bot that answers from your backend" says to start it: its shop is on loopback.
    env.DEV_ALLOW_PRIVATE_TARGETS = 'true';
    const started = Date.now();
    npm = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let banner = '';
    npm.stdout!.on('data', (d) => (banner += d));
    npm.stderr!.on('data', (d) => (banner += d));
    const until = Date.now() + 150_000;
    while (!banner.includes('Operator CLI:')) {
      if (Date.now() > until || npm.exitCode !== null) throw new Error(`npm start did not get ready: ${banner.slice(-2000)}`);
      await sleep(100);
    }
    console.log(`npm start → ready in ${((Date.now() - started) / 1000).toFixed(1)} s (dist/ already built: ${!banner.includes('Compiling')})`);
    const base = `http://localhost:${port}`;
    expect(banner).toContain(`Service API listening on ${base}`);
    expect(banner).toContain(`${base}/docs`);
    expect(banner).toContain(`${base}/dashboard`);
    expect(banner).toContain(`WhatsApp Cloud API simulator on http://127.0.0.1:${simPort}`);
    expect(banner).toContain(`export SERVICE_URL=${base}`);
    expect(banner).toMatch(/ADMIN_TOKEN=adm_/);

    // The blocks run on any port: no address is written in them but the defaults of the variables at their top.
    for (const b of blocks) {
      const named = b.script.split('\n').filter((l) => /localhost:\d|127\.0\.0\.1:\d/.test(l) && !/^(export )?(SERVICE_URL|SIM_URL)=\$\{/.test(l));
      expect({ block: b.name, named }).toEqual({ block: b.name, named: [] });
    }
    // One shell for all blocks, as a user pasting them one after the other.
    const script = ['set -euo pipefail', ...blocks.map((b) => `echo; echo "=== ${b.name}"\n${b.script}`)].join('\n')
      .replaceAll('.data/', `${data}/`)
      .replaceAll('../mybot', `${dir}/mybot`);
    const shellEnv: NodeJS.ProcessEnv = { ...process.env, SERVICE_URL: base, SIM_URL: `http://127.0.0.1:${simPort}`, SHOP_PORT: String(await freePort()) };
    for (const k of ['ADMIN_TOKEN', 'SERVICE_API_KEY', 'PROJECT']) delete shellEnv[k];
    const run = await bash(script, shellEnv);
    expect({ code: run.code, stderr: run.stderr.split('\n').filter((l) => !/Unknown (user|env) config|^$/.test(l)) }).toEqual({ code: 0, stderr: [] });
    const sections = run.stdout.split(/^=== /m).slice(1);
    blocks.forEach((b, i) => {
      for (const line of b.expected) expect({ block: b.name, line, output: sections[i] }).toEqual({ block: b.name, line, output: expect.stringMatching(pattern(line)) });
    });
  }, 240_000);

  it('When the README and the docs it links are read, then every relative link names a file of the project', () => {
    const broken: string[] = [];
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const docs = [...new Set([...readme.matchAll(/\]\((docs\/[\w.-]+\.md)(?:#[\w-]*)?\)/g)].map((m) => m[1]))];
    for (const file of ['README.md', ...docs]) {
      const text = readFileSync(path.join(root, file), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1].split('#')[0];
        if (!target || /^[a-z]+:/i.test(target)) continue;
        if (!existsSync(path.join(root, path.dirname(file), target))) broken.push(`${file} → ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
