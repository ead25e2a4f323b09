-- Move an MLflow model registry from the tables mlflow-cratedb 3.12 creates
-- (schema "mlflow" here) into tables carbongate's Migrate created (schema
-- "carbongate" here); edit the two schema names to yours. Both layouts have
-- the same columns; mlflow-cratedb's primary keys start with "workspace",
-- carbongate's leave it out (see README.md, "Tables"), and CrateDB cannot
-- change the primary key of a table, so the rows are copied:
--
--   carbonctl registry migrate --registry crate://crate@HOST:5432/carbongate
--
-- then run the statements below with any CrateDB client (crash, psql),
-- and point both carbongate (crate://…/carbongate) and mlflow-cratedb
-- (crate://…/?schema=carbongate) at the new schema. Stop MLflow writers
-- first. Only workspace 'default' is copied: carbongate's keys hold one
-- workspace. Running it again adds only rows that are new since: CrateDB's
-- INSERT … SELECT skips rows whose key exists.

REFRESH TABLE "mlflow"."registered_models", "mlflow"."model_versions",
  "mlflow"."registered_model_tags", "mlflow"."model_version_tags",
  "mlflow"."registered_model_aliases";

INSERT INTO "carbongate"."registered_models"
  ("name", "key", "value", "creation_time", "last_updated_time", "description", "workspace")
SELECT "name", "key", "value", "creation_time", "last_updated_time", "description", "workspace"
FROM "mlflow"."registered_models" WHERE "workspace" = 'default';

INSERT INTO "carbongate"."model_versions"
  ("name", "version", "creation_time", "last_updated_time", "description", "user_id",
   "current_stage", "source", "storage_location", "run_id", "run_link", "status",
   "status_message", "workspace")
SELECT "name", "version", "creation_time", "last_updated_time", "description", "user_id",
  "current_stage", "source", "storage_location", "run_id", "run_link", "status",
  "status_message", "workspace"
FROM "mlflow"."model_versions" WHERE "workspace" = 'default';

INSERT INTO "carbongate"."registered_model_tags"
  ("name", "key", "value", "creation_time", "last_update_time", "description", "workspace")
SELECT "name", "key", "value", "creation_time", "last_update_time", "description", "workspace"
FROM "mlflow"."registered_model_tags" WHERE "workspace" = 'default';

INSERT INTO "carbongate"."model_version_tags" ("name", "version", "key", "value", "workspace")
SELECT "name", "version", "key", "value", "workspace"
FROM "mlflow"."model_version_tags" WHERE "workspace" = 'default';

INSERT INTO "carbongate"."registered_model_aliases" ("name", "alias", "version", "workspace")
SELECT "name", "alias", "version", "workspace"
FROM "mlflow"."registered_model_aliases" WHERE "workspace" = 'default';

REFRESH TABLE "carbongate"."registered_models", "carbongate"."model_versions",
  "carbongate"."registered_model_tags", "carbongate"."model_version_tags",
  "carbongate"."registered_model_aliases";
