/**
 * A jest reporter for CI: where a run stalls, its log must say in which file, and a run stopped by
 * CI's watchdog (.ci/run) must still say what passed and failed before it.
 *
 * With TEST_PROGRESS_FILE set it rewrites that file after every test file with the tallies so far
 * and the files still running (JSON); with TEST_PROGRESS_LOG=1 it prints one line as each file
 * starts. Without either it does nothing. Plain JavaScript: jest loads reporters untransformed.
 */
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

export default class ProgressReporter {
  constructor(globalConfig) {
    this.root = globalConfig.rootDir;
    this.file = process.env.TEST_PROGRESS_FILE;
    this.log = process.env.TEST_PROGRESS_LOG === '1';
    this.tally = { passed: 0, failed: 0, files: 0, failedFiles: [], running: {} };
  }

  name(test) {
    return relative(this.root, test.path);
  }

  onTestStart(test) {
    const at = new Date().toISOString().slice(11, 19);
    this.tally.running[this.name(test)] = at;
    if (this.log) process.stderr.write(`[progress] ${at} start ${this.name(test)}\n`);
    this.save();
  }

  onTestResult(test, result) {
    delete this.tally.running[this.name(test)];
    this.tally.files += 1;
    this.tally.passed += result.numPassingTests;
    // A file that fails to run (a hook that throws or times out) counts as one failure.
    const failed = result.numFailingTests + (result.testExecError ? 1 : 0);
    this.tally.failed += failed;
    if (failed) this.tally.failedFiles.push(this.name(test));
    this.save();
  }

  save() {
    if (this.file) writeFileSync(this.file, JSON.stringify(this.tally));
  }
}
