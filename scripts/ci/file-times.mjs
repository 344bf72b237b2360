/**
 * Each test file's time in CI, from jest's --json results and the test environment's record of
 * how long each file waited for the run's locks (tests/support/test-environment.js): an `@alone`
 * file waits for the others to finish and a proof for the proof before it, so its wall time alone
 * would overstate it.
 * The same record gives the machine's busy CPU seconds (all cores, all processes) while the file ran:
 * for a file that ran alone, what it costs the machine, and so whether it could share the workers.
 * `node scripts/ci/file-times.mjs <results.json> <lock-waits.tsv>`: every file, slowest first,
 * then the totals per layer (jest project) and the tests' wall time. With `--write`, each file's
 * own seconds also go to tests/support/file-times.json, the order of the next runs
 * (tests/support/sequencer.js): commit it after a CI-like run when files were added or grew.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const write = args.includes('--write');
const [resultsFile, waitsFile] = args.filter((a) => a !== '--write');
const results = JSON.parse(readFileSync(resultsFile, 'utf8'));
const waits = new Map();
const busy = new Map();
for (const line of (waitsFile ? readFileSync(waitsFile, 'utf8') : '').split('\n')) {
  const [file, ms, cpu] = line.split('\t');
  if (file && ms) waits.set(file, Number(ms));
  if (file && cpu) busy.set(file, Number(cpu));
}
const EDGES = new Set(['http', 'channel', 'simulator', 'contract', 'jobs', 'house']);
const layerOf = (file) => {
  const dir = file.split('/')[1];
  return dir === 'proofs' ? 'proofs' : EDGES.has(dir) ? 'edges' : 'rooms';
};
const rows = results.testResults.map((r) => {
  const file = r.name.replace(process.cwd() + '/', '');
  const wait = (waits.get(file) ?? 0) / 1000;
  const wall = (r.endTime - r.startTime) / 1000;
  return { file, layer: layerOf(file), wait, own: Math.max(0, wall - wait), cpu: busy.get(file) };
});
rows.sort((a, b) => b.own - a.own);
const s = (n) => n.toFixed(1).padStart(6);
console.log('file times (seconds of its own, waiting for the run\'s lock, the machine\'s busy CPU seconds meanwhile; slowest first):');
for (const r of rows) console.log(`  ${s(r.own)} ${s(r.wait)} ${r.cpu === undefined ? '     -' : s(r.cpu)}  ${r.layer.padEnd(6)} ${r.file}`);
const layers = new Map();
for (const r of rows) {
  const l = layers.get(r.layer) ?? { files: 0, own: 0, wait: 0 };
  l.files += 1;
  l.own += r.own;
  l.wait += r.wait;
  layers.set(r.layer, l);
}
const starts = results.testResults.map((r) => r.startTime);
const ends = results.testResults.map((r) => r.endTime);
const wallAll = starts.length ? (Math.max(...ends) - Math.min(...starts)) / 1000 : 0;
console.log(`by layer: ${[...layers].map(([name, l]) => `${name} ${l.files} files, ${l.own.toFixed(0)} s of their own (${l.wait.toFixed(0)} s waiting)`).join('; ')}; the tests' wall time ${wallAll.toFixed(0)} s`);
if (write) {
  const times = Object.fromEntries(rows.map((r) => [r.file, Math.round(r.own * 10) / 10]).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(new URL('../../tests/support/file-times.json', import.meta.url), `${JSON.stringify(times, null, 2)}\n`);
}
