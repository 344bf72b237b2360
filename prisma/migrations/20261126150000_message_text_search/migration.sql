-- Search in message text (issue 68, item 4): the inbox finds a conversation by words of its
-- messages (PostgreSQL full-text, the `simple` configuration: no language's stemming, so names,
-- order numbers and any language match as written). The searched text is a text message's body (both
-- directions' stored shapes), a caption, a document's file name and an interactive answer's title:
-- one IMMUTABLE function, used by the index and by the query (lib/conversations/console-filters.ts),
-- so they cannot drift. Not in schema.prisma: Prisma's schema has no expression indexes.
CREATE FUNCTION message_search_text(content jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT concat_ws(' ',
    content->'text'->>'body', content->>'content',
    content->'media'->>'caption', content->'media'->>'filename',
    content->'image'->>'caption', content->'video'->>'caption',
    content->'document'->>'caption', content->'document'->>'filename',
    content->'interactive'->'button_reply'->>'title', content->'interactive'->'list_reply'->>'title',
    content->'button'->>'text') $$;

CREATE INDEX "messages_text_search_idx" ON "messages" USING gin (to_tsvector('simple'::regconfig, message_search_text("content")));
