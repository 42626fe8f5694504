-- System views (system.rs): pg_catalog and information_schema as clients query them.
CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(20) NOT NULL, balance NUMERIC(12,2) DEFAULT 0, opened DATE)
----
ok CREATE TABLE

CREATE UNIQUE INDEX accounts_owner ON accounts (owner)
----
ok CREATE INDEX

CREATE TABLE events (at TIMESTAMP, note TEXT)
----
ok CREATE TABLE

-- information_schema: what ORMs ask to find tables and columns.
SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name
----
public | accounts | BASE TABLE
public | events | BASE TABLE

SELECT column_name, data_type, is_nullable, column_default, character_maximum_length, numeric_precision, numeric_scale FROM information_schema.columns WHERE table_name = 'accounts' ORDER BY ordinal_position
----
id | integer | NO | NULL | NULL | 32 | 0
owner | character varying | NO | NULL | 20 | NULL | NULL
balance | numeric | YES | 0 | NULL | 12 | 2
opened | date | YES | NULL | NULL | NULL | NULL

SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public'
----
6

SELECT schema_name FROM information_schema.schemata ORDER BY schema_name
----
information_schema
pg_catalog
public

SELECT table_name FROM information_schema.tables WHERE table_schema = 'information_schema' ORDER BY table_name
----
columns
constraint_column_usage
key_column_usage
referential_constraints
schemata
sequences
table_constraints
tables
views

-- pg_catalog, qualified or not (pg_catalog is searched first), joined as psql and drivers do.
SELECT c.relname, c.relkind, n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ORDER BY c.relname
----
accounts | r | public
accounts_owner | i | public
accounts_pkey | i | public
events | r | public

SELECT oid, relname, relnatts, relhasindex FROM pg_class WHERE relkind = 'r' ORDER BY oid
----
16384 | accounts | 4 | t
16448 | events | 2 | f

SELECT pg_class.relname FROM pg_catalog.pg_class WHERE pg_class.oid = 16385
----
accounts_pkey

SELECT a.attnum, a.attname, t.typname, a.atttypmod, a.attnotnull FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = 16384 ORDER BY a.attnum
----
1 | id | int4 | -1 | t
2 | owner | varchar | 24 | t
3 | balance | numeric | 786438 | f
4 | opened | date | -1 | f

SELECT i.indisunique, i.indisprimary, i.indkey, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 16384 ORDER BY c.relname
----
t | f | 2 | accounts_owner
t | t | 1 | accounts_pkey

-- A driver's type lookup by OID and by name.
SELECT typname, typlen, typcategory, typarray FROM pg_catalog.pg_type WHERE oid = 1700
----
numeric | -1 | N | 1231

SELECT oid FROM pg_type WHERE typname IN ('int4', 'text', 'timestamp') ORDER BY oid
----
23
25
1114

SELECT tablename, hasindexes FROM pg_tables ORDER BY tablename
----
accounts | t
events | f

SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'accounts' ORDER BY indexname
----
accounts_owner | CREATE UNIQUE INDEX accounts_owner ON public.accounts USING btree (owner)
accounts_pkey | CREATE UNIQUE INDEX accounts_pkey ON public.accounts USING btree (id)

SELECT datname, encoding FROM pg_database
----
engram | 6

-- pg_settings shows the session's settings, as they are when the query runs.
SET statement_timeout = 1234
----
ok SET

SELECT setting FROM pg_settings WHERE name = 'statement_timeout'
----
1234

-- The views follow DDL at once.
DROP TABLE events
----
ok DROP TABLE

SELECT relname FROM pg_class WHERE relkind = 'r'
----
accounts

-- They cannot be written, and nothing can be created in their schemas.
INSERT INTO pg_catalog.pg_class (oid, relname) VALUES (1, 'x')
----
error 42501

UPDATE information_schema.tables SET table_name = 'x'
----
error 42501

DELETE FROM pg_type
----
error 42501

CREATE TABLE pg_catalog.mine (a INT)
----
error 42501

SELECT * FROM information_schema.nothing
----
error 42P01

SELECT * FROM other_schema.t
----
error 0A000
