-- DISTINCT ON, and JOIN ... USING / NATURAL JOIN (the join columns shown once); every result is
-- PostgreSQL 15's.

CREATE TABLE m (id int PRIMARY KEY, who text, at int, v text)
----
ok CREATE TABLE

INSERT INTO m VALUES (1, 'a', 3, 'x'), (2, 'a', 5, 'y'), (3, 'b', 1, 'z'), (4, 'b', 9, 'w'), (5, NULL, 2, 'n'), (6, NULL, 4, 'm')
----
ok INSERT 0 6

SELECT DISTINCT ON (who) who, at, v FROM m ORDER BY who, at DESC
----
a | 5 | y
b | 9 | w
NULL | 4 | m

SELECT DISTINCT ON (who) who, v FROM m ORDER BY who, at
----
a | x
b | z
NULL | n

SELECT DISTINCT ON (who) who FROM m
----
a
b
NULL

SELECT DISTINCT ON (who) id FROM m ORDER BY at
----
error 42P10

SELECT DISTINCT ON (at % 2) at % 2 AS parity, id FROM m ORDER BY at % 2, id DESC
----
0 | 6
1 | 4

SELECT DISTINCT ON (who, v) who, v FROM m ORDER BY who, v LIMIT 3
----
a | x
a | y
b | w

SELECT DISTINCT ON (who) who, count(*) FROM m GROUP BY who, at ORDER BY who, count(*) DESC
----
a | 1
b | 1
NULL | 1

CREATE TABLE a (id int PRIMARY KEY, x text)
----
ok CREATE TABLE

CREATE TABLE b (id int PRIMARY KEY, y text)
----
ok CREATE TABLE

CREATE TABLE c (id int, x text, z int)
----
ok CREATE TABLE

INSERT INTO a VALUES (1, 'p'), (2, 'q'), (3, 'r')
----
ok INSERT 0 3

INSERT INTO b VALUES (1, 'one'), (3, 'three'), (4, 'four')
----
ok INSERT 0 3

INSERT INTO c VALUES (1, 'p', 10), (3, 'zz', 30)
----
ok INSERT 0 2

SELECT * FROM a JOIN b USING (id) ORDER BY id
----
1 | p | one
3 | r | three

SELECT id, x, y FROM a LEFT JOIN b USING (id) ORDER BY id
----
1 | p | one
2 | q | NULL
3 | r | three

SELECT a.id, b.id FROM a LEFT JOIN b USING (id) ORDER BY 1
----
1 | 1
2 | NULL
3 | 3

SELECT * FROM a NATURAL JOIN c
----
1 | p | 10

SELECT * FROM a JOIN b USING (id) JOIN c USING (id) ORDER BY id
----
1 | p | one | p | 10
3 | r | three | zz | 30

SELECT count(*) FROM a JOIN b USING (nope)
----
error 42703

SELECT * FROM a JOIN c USING (id, x)
----
1 | p | 10

SELECT b.* FROM a JOIN b USING (id) ORDER BY 1
----
1 | one
3 | three
