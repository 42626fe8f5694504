-- FROM items that are not tables (subqueries, VALUES, CTEs, generate_series), set operations and
-- CREATE TABLE ... AS; every result is PostgreSQL 15's.

CREATE TABLE t (a int PRIMARY KEY, b text)
----
ok CREATE TABLE

INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, NULL), (4, 'x')
----
ok INSERT 0 4

SELECT a FROM t UNION SELECT 3 ORDER BY 1
----
1
2
3
4

SELECT b FROM t UNION SELECT b FROM t ORDER BY 1
----
x
y
NULL

SELECT b FROM t UNION ALL SELECT b FROM t ORDER BY 1 NULLS FIRST LIMIT 5
----
NULL
NULL
x
x
x

SELECT b FROM t INTERSECT SELECT 'x'
----
x

SELECT b FROM t INTERSECT ALL SELECT b FROM t WHERE a < 3 ORDER BY b
----
x
y

SELECT b FROM t EXCEPT SELECT 'x' ORDER BY b
----
y
NULL

SELECT b FROM t EXCEPT ALL SELECT 'x' ORDER BY b
----
x
y
NULL

SELECT 1 UNION SELECT 2.5 ORDER BY 1
----
1
2.5

SELECT 1 AS one UNION SELECT 1::bigint
----
1

SELECT a, b FROM t UNION SELECT a FROM t
----
error 42601

SELECT a FROM t UNION SELECT b FROM t
----
error 42804

SELECT 1 UNION SELECT 2 INTERSECT SELECT 2 ORDER BY 1
----
1
2

(SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL (SELECT a FROM t ORDER BY a DESC LIMIT 1) ORDER BY 1
----
1
4

SELECT * FROM (SELECT a, b FROM t WHERE a > 1) s WHERE s.b = 'x'
----
4 | x

SELECT s.x, t.b FROM (SELECT a AS x FROM t) AS s JOIN t ON t.a = s.x ORDER BY 1
----
1 | x
2 | y
3 | NULL
4 | x

SELECT * FROM (SELECT a, b FROM t) AS s(p, q) ORDER BY p DESC
----
4 | x
3 | NULL
2 | y
1 | x

SELECT count(*), max(v) FROM (VALUES (1), (5), (3)) AS v(v)
----
3 | 5

SELECT * FROM (SELECT b, count(*) AS n FROM t GROUP BY b) g ORDER BY n DESC, b
----
x | 2
y | 1
NULL | 1

SELECT * FROM (SELECT 1) AS s(a, b)
----
error 42P10

WITH c AS (SELECT a FROM t WHERE a > 2) SELECT * FROM c ORDER BY a
----
3
4

WITH c(x) AS (SELECT a FROM t), d AS (SELECT x * 10 AS y FROM c) SELECT sum(y) FROM d
----
100

WITH c AS (SELECT 1 AS v) SELECT * FROM c c1, c c2
----
1 | 1

WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r
----
1
2
3
4
5

WITH RECURSIVE r(n) AS (VALUES (1) UNION SELECT n % 3 + 1 FROM r) SELECT * FROM r ORDER BY n
----
1
2
3

WITH RECURSIVE fib(i, a, b) AS (SELECT 1, 0::bigint, 1::bigint UNION ALL SELECT i + 1, b, a + b FROM fib WHERE i < 50) SELECT max(b) FROM fib
----
12586269025

WITH RECURSIVE r AS (SELECT * FROM r) SELECT * FROM r
----
error 42P19

WITH x AS (SELECT 1 AS a) SELECT * FROM (WITH x AS (SELECT 2 AS a) SELECT * FROM x) s, x
----
2 | 1

SELECT * FROM generate_series(1, 5) g ORDER BY 1
----
1
2
3
4
5

SELECT g.i * 2 FROM generate_series(1, 10, 3) AS g(i)
----
2
8
14
20

SELECT * FROM generate_series(5, 1, -2)
----
5
3
1

SELECT count(*) FROM generate_series(1, 10000)
----
10000

SELECT * FROM generate_series(1, 3, 0)
----
error 22023

SELECT * FROM t WHERE a IN (SELECT * FROM generate_series(2, 3)) ORDER BY a
----
2 | y
3 | NULL

SELECT (SELECT max(x) FROM (VALUES (4), (9)) v(x))
----
9

CREATE TABLE t2 AS SELECT a, b, a * 2 AS c FROM t WHERE a < 4
----
ok SELECT 3

SELECT * FROM t2 ORDER BY a
----
1 | x | 2
2 | y | 4
3 | NULL | 6

CREATE TABLE t3 AS SELECT 1 AS one
----
ok SELECT 1

CREATE TABLE t3 AS SELECT 2
----
error 42P07

CREATE TABLE IF NOT EXISTS t3 AS SELECT 1
----
ok CREATE TABLE AS

BEGIN
----
ok BEGIN

CREATE TABLE t4 AS SELECT * FROM generate_series(1, 3) AS g(n)
----
ok SELECT 3

SELECT sum(n) FROM t4
----
6

ROLLBACK
----
ok ROLLBACK

SELECT * FROM t4
----
error 42P01

SELECT * FROM t AS u(k) ORDER BY k
----
1 | x
2 | y
3 | NULL
4 | x

CREATE TABLE tg (a int PRIMARY KEY, b int)
----
ok CREATE TABLE

INSERT INTO tg VALUES (1, 10), (2, 20), (3, 30)
----
ok INSERT 0 3

SELECT * FROM generate_series((SELECT min(a) FROM tg), (SELECT max(a) FROM tg)) g ORDER BY 1
----
1
2
3

SELECT x.a, g FROM tg x, generate_series(1, (SELECT count(*)::int FROM tg)) g WHERE g = x.a ORDER BY 1
----
1 | 1
2 | 2
3 | 3

SELECT a, row_number() OVER (ORDER BY a) FROM tg t WHERE EXISTS (SELECT 1 FROM tg t2 WHERE t2.a = t.a + 1) ORDER BY a
----
1 | 1
2 | 2

WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM x WHERE n IN (SELECT * FROM x)) SELECT * FROM x
----
error 42P19

WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT count(*) FROM x) SELECT * FROM x
----
error 42P19

WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT sum(n) FROM x) SELECT * FROM x
----
error 42P19

WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM x FOR UPDATE) SELECT * FROM x
----
error 0A000

WITH RECURSIVE x(id) AS (values (1) UNION ALL SELECT (SELECT * FROM x) FROM x WHERE id < 5) SELECT * FROM x
----
error 42P19

WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT a.n + 1 FROM x a, x b WHERE a.n < 3) SELECT * FROM x
----
error 42P19

WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 4) SELECT sum(n) FROM x
----
10

WITH RECURSIVE tree(id, depth) AS (SELECT 1, 0 UNION ALL SELECT id * 2 + k, depth + 1 FROM tree, (VALUES (0), (1)) v(k) WHERE depth < 3) SELECT count(*), max(id) FROM tree
----
15 | 15
