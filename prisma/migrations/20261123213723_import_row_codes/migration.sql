-- A stable machine-readable code beside each import report row's text. Rows stored before it get
-- the code their text stood for (the texts of lib/contacts-import/imports.ts until now).
ALTER TABLE "contact_import_rows" ADD COLUMN "code" TEXT;
UPDATE "contact_import_rows" SET "code" = CASE
  WHEN "outcome" = 'merged' THEN 'duplicate'
  WHEN "reason" = 'no number' THEN 'missing_number'
  WHEN "reason" LIKE 'opted_in %' THEN 'invalid_opted_in'
  WHEN "reason" LIKE 'name longer %' THEN 'name_too_long'
  WHEN "reason" LIKE 'a tag longer %' THEN 'tag_too_long'
  WHEN "reason" LIKE 'not valid CSV: %UTF-8%' OR "reason" LIKE 'not valid CSV: a NUL%' THEN 'invalid_encoding'
  WHEN "reason" LIKE 'not valid CSV: a record longer%' THEN 'line_too_long'
  WHEN "reason" LIKE 'not valid CSV: %' THEN 'malformed_csv'
  ELSE 'invalid_number' END;
ALTER TABLE "contact_import_rows" ALTER COLUMN "code" SET NOT NULL;
