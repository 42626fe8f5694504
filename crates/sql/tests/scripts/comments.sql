-- COMMENT ON and the descriptions it leaves (obj_description, col_description, pg_description), with the results of PostgreSQL 15

CREATE TABLE notes (id int PRIMARY KEY, body text, at timestamptz)
----
ok CREATE TABLE

CREATE INDEX notes_at ON notes (at)
----
ok CREATE INDEX

CREATE VIEW recent AS SELECT id FROM notes
----
ok CREATE VIEW

CREATE SEQUENCE note_ids
----
ok CREATE SEQUENCE

COMMENT ON TABLE notes IS 'what people wrote'
----
ok COMMENT

COMMENT ON COLUMN notes.body IS 'the text'
----
ok COMMENT

COMMENT ON COLUMN public.notes.at IS 'when'
----
ok COMMENT

COMMENT ON INDEX notes_at IS 'by time'
----
ok COMMENT

COMMENT ON VIEW recent IS 'the latest'
----
ok COMMENT

COMMENT ON SEQUENCE note_ids IS 'numbers'
----
ok COMMENT

SELECT obj_description('notes'::regclass, 'pg_class'), obj_description('notes'::regclass), col_description('notes'::regclass, 2), col_description('notes'::regclass, 3), col_description('notes'::regclass, 1)
----
what people wrote | what people wrote | the text | when | NULL

SELECT obj_description('notes_at'::regclass, 'pg_class')
----
by time

SELECT d.objsubid, d.description FROM pg_description d WHERE d.objoid = 'notes'::regclass ORDER BY d.objsubid
----
0 | what people wrote
2 | the text
3 | when

COMMENT ON TABLE notes IS 'changed'
----
ok COMMENT

COMMENT ON COLUMN notes.body IS NULL
----
ok COMMENT

COMMENT ON COLUMN notes.at IS ''
----
ok COMMENT

SELECT obj_description('notes'::regclass, 'pg_class'), col_description('notes'::regclass, 2), col_description('notes'::regclass, 3)
----
changed | NULL | NULL

BEGIN
----
ok BEGIN

COMMENT ON TABLE notes IS 'rolled back'
----
ok COMMENT

ROLLBACK
----
ok ROLLBACK

SELECT obj_description('notes'::regclass, 'pg_class')
----
changed

COMMENT ON TABLE nothing IS 'x'
----
error 42P01

COMMENT ON COLUMN notes.nothing IS 'x'
----
error 42703

DROP VIEW recent
----
ok DROP VIEW

DROP TABLE notes
----
ok DROP TABLE

CREATE TABLE notes (id int PRIMARY KEY)
----
ok CREATE TABLE

SELECT obj_description('notes'::regclass, 'pg_class')
----
NULL
