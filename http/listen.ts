/**
 * Listening on a configured port: a busy or forbidden port is one line that names the setting to
 * change (PORT, SIMULATOR_PORT), like the embedded PostgreSQL's names EMBEDDED_PG_PORT, instead of
 * a bare `listen EADDRINUSE` or a crash on a server that never listened. (Express 5's
 * `app.listen` hands the error to its callback as if it had listened; a plain server is used.)
 */
import type { Server } from 'node:http';

export function listenOn(server: Server, port: number, host: string, what: string, setting: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => reject(new Error(portMessage(e, port, host, what, setting)));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server);
    });
  });
}

export function portMessage(e: NodeJS.ErrnoException, port: number, host: string, what: string, setting: string): string {
  if (e.code === 'EADDRINUSE') return `${what}: port ${port} on ${host} is already in use by another program. Stop that program or choose another port with ${setting}.`;
  if (e.code === 'EACCES') return `${what}: not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges). Choose another port with ${setting}.`;
  if (e.code === 'EADDRNOTAVAIL') return `${what}: ${host} is not an address of this machine (port ${port}). Check HOST.`;
  return `${what}: cannot listen on ${host}:${port} (${e.message}); see ${setting}.`;
}
