-- Views: CREATE [OR REPLACE] VIEW, reading them (joined, grouped, nested, over set operations and
-- CTEs), DROP VIEW and DROP TABLE with and without CASCADE, DDL rolled back; every result is
-- PostgreSQL 15's.

CREATE TABLE t (a int PRIMARY KEY, b text, c int)
----
ok CREATE TABLE

INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20), (3, 'x', 30)
----
ok INSERT 0 3

CREATE VIEW v AS SELECT a, b FROM t WHERE c > 10
----
ok CREATE VIEW

SELECT * FROM v ORDER BY a
----
2 | y
3 | x

SELECT b, count(*) FROM v GROUP BY b ORDER BY b
----
x | 1
y | 1

CREATE VIEW v2 (k, label) AS SELECT a, upper(b) FROM v
----
ok CREATE VIEW

SELECT * FROM v2 WHERE k = 3
----
3 | X

SELECT v.a, t.c FROM v JOIN t ON t.a = v.a ORDER BY 1
----
2 | 20
3 | 30

CREATE VIEW v AS SELECT 1
----
error 42P07

CREATE OR REPLACE VIEW v AS SELECT a, b, c FROM t
----
ok CREATE VIEW

SELECT * FROM v2 ORDER BY k
----
1 | X
2 | Y
3 | X

CREATE OR REPLACE VIEW v AS SELECT a FROM t
----
error 42P16

CREATE OR REPLACE VIEW v AS SELECT b, a, c FROM t
----
error 42P16

CREATE OR REPLACE VIEW v AS SELECT a::bigint AS a, b, c FROM t
----
error 42P16

DROP TABLE t
----
error 2BP01

DROP VIEW v
----
error 2BP01

DROP TABLE v
----
error 42809

DROP VIEW t
----
error 42809

DROP VIEW IF EXISTS nope
----
ok DROP VIEW

DROP VIEW nope
----
error 42P01

BEGIN
----
ok BEGIN

DROP VIEW v CASCADE
----
ok DROP VIEW

SELECT * FROM v
----
error 42P01

ROLLBACK
----
ok ROLLBACK

SELECT count(*) FROM v2
----
3

CREATE VIEW agg AS SELECT b, sum(c) AS total FROM t GROUP BY b
----
ok CREATE VIEW

SELECT * FROM agg ORDER BY total DESC
----
x | 40
y | 20

CREATE VIEW u AS SELECT a FROM t UNION SELECT c FROM t
----
ok CREATE VIEW

SELECT * FROM u ORDER BY 1
----
1
2
3
10
20
30

CREATE VIEW w AS WITH x AS (SELECT a FROM t) SELECT count(*) AS n FROM x
----
ok CREATE VIEW

SELECT * FROM w
----
3

CREATE TABLE v (z int)
----
error 42P07

CREATE VIEW bad AS SELECT * FROM missing
----
error 42P01

CREATE VIEW bad2 (p, q, r, s) AS SELECT a, b FROM t
----
error 42601

DROP TABLE t CASCADE
----
ok DROP TABLE

SELECT * FROM v
----
error 42P01

SELECT * FROM v2
----
error 42P01

CREATE TABLE t2 (a int PRIMARY KEY, b text)
----
ok CREATE TABLE

INSERT INTO t2 VALUES (1, 'p')
----
ok INSERT 0 1

CREATE VIEW vv AS SELECT * FROM t2
----
ok CREATE VIEW

SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1
----
vv

SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1
----
t2 | BASE TABLE
vv | VIEW
