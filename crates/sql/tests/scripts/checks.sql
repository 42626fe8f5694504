-- CHECK constraints: columns' and tables', NULL passing, INSERT, UPDATE and ON CONFLICT, ALTER TABLE ADD and DROP, renamed and dropped columns, with the results of PostgreSQL 15

CREATE TABLE prod (id int PRIMARY KEY, price numeric CHECK (price > 0), qty int CONSTRAINT qty_nonneg CHECK (qty >= 0), lo int, hi int, CHECK (lo <= hi))
----
ok CREATE TABLE

INSERT INTO prod VALUES (1, 9.5, 3, 1, 2)
----
ok INSERT 0 1

INSERT INTO prod VALUES (2, -1, 3, 1, 2)
----
error 23514

INSERT INTO prod VALUES (3, 1, -3, 1, 2)
----
error 23514

INSERT INTO prod VALUES (4, 1, 3, 5, 2)
----
error 23514

INSERT INTO prod VALUES (5, NULL, NULL, NULL, 2)
----
ok INSERT 0 1

UPDATE prod SET qty = qty - 10 WHERE id = 1
----
error 23514

UPDATE prod SET qty = qty - 1 WHERE id = 1
----
ok UPDATE 1

SELECT * FROM prod ORDER BY id
----
1 | 9.5 | 2 | 1 | 2
5 | NULL | NULL | NULL | 2

INSERT INTO prod VALUES (1, 2, 2, 0, 0) ON CONFLICT (id) DO UPDATE SET price = -5
----
error 23514

-- Engram keeps a check's expression as written; PostgreSQL prints its deparsed form,
-- `CHECK ((price > (0)::numeric))`.
SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'prod'::regclass ORDER BY conname
----
prod_check | c | CHECK ((lo <= hi))
prod_pkey | p | PRIMARY KEY (id)
prod_price_check | c | CHECK ((price > 0))
qty_nonneg | c | CHECK ((qty >= 0))

ALTER TABLE prod ADD CONSTRAINT price_cap CHECK (price < 100)
----
ok ALTER TABLE

ALTER TABLE prod ADD CONSTRAINT price_cap2 CHECK (price < 5)
----
error 23514

INSERT INTO prod VALUES (6, 200, 1, 1, 1)
----
error 23514

ALTER TABLE prod DROP CONSTRAINT price_cap
----
ok ALTER TABLE

INSERT INTO prod VALUES (6, 200, 1, 1, 1)
----
ok INSERT 0 1

ALTER TABLE prod RENAME COLUMN qty TO quantity
----
ok ALTER TABLE

INSERT INTO prod VALUES (7, 1, -1, 1, 1)
----
error 23514

ALTER TABLE prod DROP COLUMN quantity
----
ok ALTER TABLE

INSERT INTO prod VALUES (8, 1, 1, 1)
----
ok INSERT 0 1

ALTER TABLE prod ADD COLUMN w int CHECK (w <> 13)
----
ok ALTER TABLE

INSERT INTO prod VALUES (9, 1, 1, 1, 13)
----
error 23514

CREATE TABLE badcheck (a int CHECK (b > 0))
----
error 42703

CREATE TABLE badcheck (a int CHECK (a))
----
error 42804

CREATE TABLE badcheck (a int CHECK (count(*) > 0))
----
error 42803

CREATE TABLE pos (n smallint CHECK (n >= 0), m int CHECK (m >= 0))
----
ok CREATE TABLE

SELECT conname FROM pg_constraint WHERE conrelid = 'pos'::regclass ORDER BY conname
----
pos_m_check
pos_n_check
