/**
 * Operator CLI: a project's stored files (the bot reads them with files.get and sends them with
 * files.sendAsMedia). Uploads and downloads are streamed: a file is never read into memory.
 */
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import path from 'node:path';
import { flagValue, UsageError } from './args.js';
import type { Command } from './command.js';
import * as f from './format.js';

export const FILE_COMMANDS: Command[] = [
  {
    group: 'files', name: 'list', args: ['<projectId>'],
    summary: "List a project's stored files (name, verified type, size, last change) and its quota",
    async run(api, [projectId]) {
      const data = await api.listProjectFiles(projectId);
      const u = data.usage;
      return {
        data,
        human: `${f.table(['NAME', 'TYPE', 'BYTES', 'UPDATED'], data.files.map((x) => [x.name, x.content_type, String(x.size), f.when(x.updated_at)]), 'No files.')}\n\n${u.files} of at most ${u.max_files} files; ${u.bytes} of at most ${u.max_bytes} bytes.`,
      };
    },
  },
  {
    group: 'files', name: 'upload', args: ['<projectId>', '<localFile>'], options: '[--name NAME]', flags: ['name'],
    summary: 'Upload (or replace) a file; its name is the local file name unless --name is given. Its type is found from its bytes',
    async run(api, [projectId, local], args) {
      let size: number;
      try {
        size = statSync(local).size;
      } catch {
        throw new UsageError(`no file ${local}`, 'usage_error', false);
      }
      const name = flagValue(args, 'name') ?? path.basename(local);
      const data = await api.uploadProjectFile(projectId, name, createReadStream(local), size);
      return { data, human: `${data.created ? 'Uploaded' : 'Replaced'} ${data.file.name} (${data.file.content_type}, ${data.file.size} bytes).` };
    },
  },
  {
    group: 'files', name: 'download', args: ['<projectId>', '<name>'], options: '[--out PATH]', flags: ['out'],
    summary: 'Download a file (to PATH, default the file name in the current folder)',
    async run(api, [projectId, name], args) {
      const out = flagValue(args, 'out') ?? name;
      const bytes = await api.downloadProjectFile(projectId, name, createWriteStream(out));
      return { data: { name, path: out, size: bytes }, human: `Downloaded ${name} to ${out} (${bytes} bytes).` };
    },
  },
  {
    group: 'files', name: 'delete', args: ['<projectId>', '<name>'],
    summary: 'Delete a file (the bot reads not_found from its next call)',
    async run(api, [projectId, name]) {
      const data = await api.deleteProjectFile(projectId, name);
      return { data, human: `File ${data.file.name} deleted.` };
    },
  },
];
