/**
 * compose.yaml's profile `ha` archives and backs up as the native topology does (issue 71 item 4,
 * scripts/ha/cluster.sh): its Patroni image installs Debian's pgbackrest with a configuration, each
 * node names its own port to pgBackRest and shares one repository volume, and patroni.yml's
 * archive_command runs because the image names PGBACKREST_CONFIG. Read from the files: building
 * the image needs Debian's registry and a Docker daemon, which CI may not have.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync, statSync } from 'node:fs';
import { parse } from 'yaml';

const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true }) as { services: Record<string, any>; volumes: Record<string, unknown> };
const dockerfile = readFileSync('docker/ha/Dockerfile', 'utf8');
const patroniStage = dockerfile.slice(dockerfile.indexOf('AS patroni'), dockerfile.indexOf('AS etcd'));
const pgbackrestConf = readFileSync('docker/ha/pgbackrest.conf', 'utf8');

describe("compose.yaml's HA profile: point-in-time recovery", () => {
  it('When the Patroni image is built, then it installs pgbackrest, its configuration and the entrypoint that schedules backups, and names PGBACKREST_CONFIG for archive_command', () => {
    expect(patroniStage).toMatch(/apt-get install[^\n]*\bpgbackrest\b/);
    expect(patroniStage).toContain('COPY docker/ha/pgbackrest.conf /etc/pgbackrest/pgbackrest.conf');
    expect(patroniStage).toMatch(/PGBACKREST_CONFIG=\/etc\/pgbackrest\/pgbackrest.conf/);
    expect(patroniStage).toMatch(/ENTRYPOINT \["patroni-start"\]/);
    expect(statSync('docker/ha/patroni-start.sh').mode & 0o111).not.toBe(0);
    expect(readFileSync('docker/ha/patroni.yml', 'utf8')).toMatch(/archive_command: 'test -z "\$PGBACKREST_CONFIG" \|\| pgbackrest --stanza=messaging archive-push/);
    // The stanza patroni.yml archives into, at the data folder the image gives Patroni.
    expect(pgbackrestConf).toMatch(/^\[messaging\]\npg1-path=\/var\/lib\/postgresql\/ha\/data$/m);
    expect(pgbackrestConf).toMatch(/^repo1-path=\/var\/lib\/pgbackrest$/m);
    expect(pgbackrestConf).toMatch(/^repo1-retention-full=2$/m);
  });

  it('When the profile runs, then every Patroni node tells pgBackRest its own port, mounts the one repository volume and keeps the native schedule', () => {
    expect(compose.volumes).toHaveProperty('pgbackrest');
    for (const n of ['pg1', 'pg2', 'pg3']) {
      const s = compose.services[n];
      expect(s.profiles).toEqual(['ha']);
      expect(s.volumes).toEqual([`${n}data:/var/lib/postgresql/ha`, 'pgbackrest:/var/lib/pgbackrest']);
      expect(s.environment.PGBACKREST_PG1_PORT).toBe(s.environment.PATRONI_POSTGRESQL_LISTEN.replace(/^127\.0\.0\.1:/, ''));
      expect(s.environment).toMatchObject({ HA_BACKUP_INCR_SECONDS: '${HA_BACKUP_INCR_SECONDS:-3600}', HA_BACKUP_FULL_SECONDS: '${HA_BACKUP_FULL_SECONDS:-86400}' });
      expect(s.init).toBe(true);
    }
  });
});
