/** Helpers of the upload tests: a project with a key, and checks that nothing was left behind. */
import { expect } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import type { TestApp } from './app.js';

export async function projectWithKey(t: TestApp, scopes: string[]) {
  const project = await t.admin.project();
  const key = await t.admin.key(project.id, scopes);
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { project, key: key.secret, phoneNumberId: channel.phoneNumberId };
}

const listTemp = async () => (await fs.readdir(os.tmpdir())).filter((n) => n.startsWith('svc-upload-'));
/** Folders left by earlier runs (a killed process) are not this run's. */
const before = new Set(await listTemp());

/** Upload temp folders of this run that still exist (the service removes them when a request ends). */
export async function leftoverTempDirs(): Promise<string[]> {
  return (await listTemp()).filter((n) => !before.has(n));
}

/** Waits until no upload temp folder is left (they go when the response closes). */
export async function expectNoTempFiles(): Promise<void> {
  for (let i = 0; i < 50 && (await leftoverTempDirs()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(await leftoverTempDirs()).toEqual([]);
}
