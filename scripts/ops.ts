/**
 * Operator CLI over the operator API (admin-openapi.yaml).
 *   npm run ops -- <group> <command> [args] [--json]      (npm run ops -- --help for the list)
 * The work is in scripts/ops/: args.ts (parsing), client.ts (HTTP), commands.ts (one entry per
 * operation), format.ts (output for people), help.ts (usage) and main.ts (dispatch, exit codes).
 */
import { main, processIo } from './ops/main.js';

process.exitCode = await main(process.argv.slice(2), process.env, processIo);
