-- A project's channel has a kind (issue 70, item 1): the adapter the domain talks to for it.
ALTER TABLE "channel_settings" ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'whatsapp_cloud';
