-- Joins, grouping, ordering, limits, subqueries, indexes and EXPLAIN.
CREATE TABLE dept (id INT PRIMARY KEY, name TEXT NOT NULL)
----
ok CREATE TABLE

CREATE TABLE emp (id SERIAL PRIMARY KEY, dept_id INT, name TEXT, salary INT, UNIQUE (name))
----
ok CREATE TABLE

INSERT INTO dept VALUES (1, 'eng'), (2, 'ops'), (3, 'empty')
----
ok INSERT 0 3

INSERT INTO emp (dept_id, name, salary) VALUES (1, 'ann', 100), (1, 'bob', 80), (2, 'cid', 90), (NULL, 'dan', 70), (2, 'eve', 90) RETURNING id
----
1
2
3
4
5

SELECT e.name, d.name FROM emp e JOIN dept d ON d.id = e.dept_id ORDER BY e.name
----
ann | eng
bob | eng
cid | ops
eve | ops

SELECT d.name, e.name FROM dept d LEFT JOIN emp e ON e.dept_id = d.id AND e.salary > 85 ORDER BY d.name, e.name
----
empty | NULL
eng | ann
ops | cid
ops | eve

-- Output columns of the innermost table are moved into result rows, not cloned: a column
-- read twice, an outer column repeated for several inner rows, a sort on a moved column.
SELECT e.name, e.name, upper(e.name) FROM emp e WHERE e.salary >= 90 ORDER BY e.name
----
ann | ann | ANN
cid | cid | CID
eve | eve | EVE

SELECT d.name, e.name, e.salary FROM dept d JOIN emp e ON e.dept_id = d.id ORDER BY e.salary DESC, e.name
----
eng | ann | 100
ops | cid | 90
ops | eve | 90
eng | bob | 80

SELECT name FROM emp ORDER BY name DESC LIMIT 2
----
eve
dan

SELECT dept_id, count(*), sum(salary), max(name) FROM emp GROUP BY dept_id HAVING count(*) > 1 ORDER BY dept_id
----
1 | 2 | 180 | bob
2 | 2 | 180 | eve

SELECT count(DISTINCT salary), count(dept_id), count(*) FROM emp
----
4 | 4 | 5

SELECT DISTINCT salary FROM emp ORDER BY salary DESC
----
100
90
80
70

SELECT name FROM emp ORDER BY salary DESC, name LIMIT 2 OFFSET 1
----
cid
eve

SELECT name FROM emp WHERE dept_id IN (SELECT id FROM dept WHERE name = 'ops') ORDER BY 1
----
cid
eve

SELECT name, (SELECT max(salary) FROM emp) - salary AS gap FROM emp WHERE id = 2
----
bob | 20

SELECT name FROM emp WHERE EXISTS (SELECT 1 FROM dept WHERE id = 3) AND salary < 75
----
dan

SELECT name FROM emp WHERE dept_id IS NULL OR salary = 80 ORDER BY name
----
bob
dan

SELECT CASE WHEN salary >= 90 THEN 'high' ELSE 'low' END AS band, count(*) FROM emp GROUP BY 1 ORDER BY 1
----
high | 3
low | 2

SELECT name, salary FROM emp GROUP BY dept_id
----
error 42803

INSERT INTO emp (dept_id, name, salary) VALUES (1, 'ann', 1)
----
error 23505

INSERT INTO emp (dept_id, name, salary) VALUES (1, 'ann', 1) ON CONFLICT (name) DO NOTHING
----
ok INSERT 0 0

INSERT INTO emp (id, dept_id, name, salary) VALUES (1, 1, 'zed', 1) ON CONFLICT (id) DO UPDATE SET salary = emp.salary + excluded.salary RETURNING id, name, salary
----
1 | ann | 101

CREATE INDEX emp_by_dept ON emp (dept_id, salary)
----
ok CREATE INDEX

EXPLAIN SELECT name FROM emp WHERE dept_id = 2 ORDER BY salary
----
Index Scan on emp using emp_by_dept (dept_id)

SELECT name FROM emp WHERE dept_id = 2 ORDER BY salary DESC, name
----
cid
eve

SELECT name FROM emp WHERE dept_id = 1 AND salary > 90
----
ann

EXPLAIN SELECT name FROM emp WHERE id = $1
----
Point Lookup on emp using emp_pkey (id)

EXPLAIN SELECT * FROM emp WHERE name > 'b' ORDER BY id LIMIT 1
----
Limit
  ->  Sort (1 keys)
      ->  Index Scan on emp using emp_name_key (name)

EXPLAIN SELECT count(*) FROM emp e JOIN dept d ON d.id = e.dept_id WHERE e.salary > 10
----
Aggregate
  ->  Nested Loop
      ->  Seq Scan on emp
      ->  Point Lookup on dept using dept_pkey (id)
            Filter: (WHERE clause)

-- Conditions an access path decides are not tested again; those it cannot decide are.
SELECT count(*) FROM emp WHERE id = 2 AND id = 3
----
0

SELECT name FROM emp WHERE id > 1 AND id > 3 AND id < 10 ORDER BY id
----
dan
eve

SELECT count(*) FROM emp WHERE id = 3000000000
----
0

SELECT count(*) FROM emp WHERE id < 3000000000
----
5

SELECT name FROM emp WHERE id = 2.0
----
bob

SELECT count(*) FROM emp WHERE id = 2.5
----
0

-- An IN list on the primary key is a lookup per listed value: repeats, NULLs, values no row
-- has, values out of the column's range, and other conditions on the rows found.
EXPLAIN SELECT name FROM emp WHERE id IN (5, 1, 3)
----
Point Lookups on emp using emp_pkey (id), 3 listed keys

SELECT name FROM emp WHERE id IN (5, 1, 3, 1, NULL, 99, 3000000000)
----
ann
cid
eve

SELECT name FROM emp WHERE id IN (5, 1, 3) AND salary < 95 ORDER BY name DESC
----
eve
cid

SELECT name FROM emp WHERE id IN (2.0, 2.5, 4) ORDER BY id
----
bob
dan

SELECT count(*) FROM emp WHERE id IN (NULL)
----
0

SELECT name FROM emp WHERE id NOT IN (1, 2, 3) ORDER BY id
----
dan
eve

SELECT name FROM emp WHERE id IN (4, 2, 5) ORDER BY id LIMIT 2
----
bob
dan

-- On a composite primary key the listed column may be any key column, the others fixed.
CREATE TABLE grid (w INT, i INT, v TEXT, PRIMARY KEY (w, i))
----
ok CREATE TABLE

INSERT INTO grid VALUES (1, 1, 'a'), (1, 2, 'b'), (1, 3, 'c'), (2, 1, 'd'), (2, 3, 'e'), (3, 3, 'f')
----
ok INSERT 0 6

EXPLAIN SELECT v FROM grid WHERE w = 1 AND i IN (3, 1)
----
Point Lookups on grid using grid_pkey (w, i), 2 listed keys

SELECT v FROM grid WHERE w = 1 AND i IN (3, 1, 7)
----
a
c

SELECT v FROM grid WHERE w IN (3, 2, 9) AND i = 3
----
e
f

SELECT v FROM grid WHERE w IN (1, 2) AND i IN (1, 3) ORDER BY v
----
a
c
d
e

SELECT v FROM grid WHERE i IN (1, 2) ORDER BY v
----
a
b
d

-- A LIMIT with nothing else to filter stops the scan itself; rows the transaction deleted are
-- still in the index, and the scan goes on past them for the rows the LIMIT asks for.
BEGIN
----
ok BEGIN

DELETE FROM grid WHERE w = 1 AND i < 3
----
ok DELETE 2

SELECT v FROM grid WHERE w = 1 ORDER BY i LIMIT 1
----
c

SELECT v FROM grid ORDER BY w, i LIMIT 2
----
c
d

SELECT v FROM grid ORDER BY w DESC, i DESC LIMIT 2 OFFSET 3
----
c

ROLLBACK
----
ok ROLLBACK

SELECT v FROM grid ORDER BY w, i LIMIT 2
----
a
b

-- A filter the key does not decide: the scan is not limited, the output is.
SELECT v FROM grid WHERE v > 'a' ORDER BY w, i LIMIT 1
----
b

-- A lookup per value of an outer row (the listed values read an earlier table).
EXPLAIN SELECT d.name, e.name FROM dept d JOIN emp e ON e.id IN (d.id, d.id + 3)
----
Nested Loop
  ->  Seq Scan on dept
  ->  Point Lookups on emp using emp_pkey (id), 2 listed keys

SELECT d.name, e.name FROM dept d JOIN emp e ON e.id IN (d.id, d.id + 3) ORDER BY d.id, e.id
----
eng | ann
eng | dan
ops | bob
ops | eve
empty | cid

SELECT d.name, e.name FROM dept d LEFT JOIN emp e ON e.id IN (d.id + 10, d.id * 3) ORDER BY d.id
----
eng | cid
ops | NULL
empty | NULL

PREPARE listed AS SELECT name FROM emp WHERE id IN ($1, $2)
----
ok PREPARE

EXECUTE listed(4, 1)
----
ann
dan

EXPLAIN UPDATE emp SET salary = salary + 1 WHERE id IN (1, 2, 9)
----
Update on emp
  ->  Point Lookups on emp using emp_pkey (id), 3 listed keys

UPDATE emp SET salary = salary + 1 WHERE id IN (1, 2, 9) RETURNING id, salary
----
1 | 102
2 | 81

DELETE FROM emp WHERE id IN (4) AND name = 'nobody'
----
ok DELETE 0

SELECT e.name FROM emp e JOIN dept d ON d.id = e.dept_id AND d.name = 'ops' ORDER BY e.name
----
cid
eve

SELECT count(*) FROM emp e JOIN dept d ON d.id = e.dept_id + 0.5
----
0

DROP INDEX emp_by_dept
----
ok DROP INDEX

SELECT name FROM emp WHERE dept_id = 2 ORDER BY salary, name
----
cid
eve

CREATE TABLE log (at TIMESTAMP DEFAULT now(), msg VARCHAR)
----
ok CREATE TABLE

INSERT INTO log (msg) VALUES ('a'), ('b')
----
ok INSERT 0 2

SELECT msg, at IS NOT NULL FROM log ORDER BY msg
----
a | t
b | t

-- now() is the transaction's start time: the same in every statement of a block.
BEGIN
----
ok BEGIN

INSERT INTO log (msg) VALUES ('c')
----
ok INSERT 0 1

INSERT INTO log (msg, at) VALUES ('d', now())
----
ok INSERT 0 1

SELECT count(DISTINCT at), min(at) = now() FROM log WHERE msg IN ('c', 'd')
----
1 | t

COMMIT
----
ok COMMIT

DELETE FROM log WHERE msg IN ('c', 'd')
----
ok DELETE 2

ALTER TABLE log ADD PRIMARY KEY (msg)
----
ok ALTER TABLE

INSERT INTO log (msg) VALUES ('a')
----
error 23505

VALUES (1, 'x'), (2, 'y') ORDER BY 1 DESC
----
2 | y
1 | x

SELECT 1 + 1 AS two, 'lit', NULL
----
2 | lit | NULL
