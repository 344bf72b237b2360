-- A project's table storage (schemas p_<key>_public / p_<key>_preview, role t<db digest>_<key>;
-- lib/tables/names.ts) was named from its id: the id itself when it is a plain [a-z0-9_]{1,40}
-- name, else 'h' || the first 24 hex digits of sha256(id). A project created with the id
-- 'h' || that digest of another's id shared the other's schemas and role (issue 44, item 2).
-- Now the name comes from storage_key: assigned once by the database (random, for new projects),
-- unique, never changed.

ALTER TABLE "projects" ADD COLUMN "storage_key" TEXT;

-- Existing projects keep the name their storage already has (no schema or role is renamed, so it
-- keeps working as it is). Where two existing projects already had one name (the collision above),
-- the one created first keeps it and the later one gets a fresh key (and empty storage).
WITH legacy AS (
  SELECT id,
         CASE WHEN lower(id) ~ '^[a-z0-9_]{1,40}$' THEN lower(id)
              ELSE 'h' || substr(encode(sha256(convert_to(lower(id), 'UTF8')), 'hex'), 1, 24) END AS key
    FROM "projects"
), ranked AS (
  SELECT id, key, row_number() OVER (PARTITION BY key ORDER BY p.created_at, p.id) AS n
    FROM legacy JOIN "projects" p USING (id)
)
UPDATE "projects" p
   SET storage_key = CASE WHEN r.n = 1 THEN r.key
                          ELSE 'k' || substr(encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'), 1, 24) END
  FROM ranked r
 WHERE r.id = p.id;

ALTER TABLE "projects" ALTER COLUMN "storage_key" SET DEFAULT ('k'::text || substr(encode(sha256(convert_to((gen_random_uuid())::text, 'UTF8'::name)), 'hex'::text), 1, 24));
ALTER TABLE "projects" ALTER COLUMN "storage_key" SET NOT NULL;
-- It names schemas and roles unquoted in operators' SQL, within PostgreSQL's 63-byte identifiers.
ALTER TABLE "projects" ADD CONSTRAINT "projects_storage_key_form" CHECK (storage_key ~ '^[a-z0-9_]{1,40}$');

-- CreateIndex
CREATE UNIQUE INDEX "projects_storage_key_key" ON "projects"("storage_key");

-- Immutable: renaming a project's storage would strand its schemas and role (and could point it at
-- another's). Prisma's schema cannot say so; the trigger does.
CREATE FUNCTION projects_storage_key_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.storage_key IS DISTINCT FROM OLD.storage_key THEN
    RAISE EXCEPTION 'projects.storage_key never changes (project %)', OLD.id USING ERRCODE = '23514';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER projects_storage_key_immutable BEFORE UPDATE OF storage_key ON "projects"
  FOR EACH ROW EXECUTE FUNCTION projects_storage_key_immutable();
