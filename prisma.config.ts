import { defineConfig } from 'prisma/config';

// DATABASE_URL is only needed by commands that touch a database; `prisma generate` does not.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? '' },
});
