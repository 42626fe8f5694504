-- RIGHT and FULL joins (a RIGHT JOIN is planned as a left join with its sides swapped, a FULL JOIN as a left join and the unmatched rows of its right side), with the results of PostgreSQL 15

CREATE TABLE l (id int PRIMARY KEY, v text)
----
ok CREATE TABLE

CREATE TABLE r (id int PRIMARY KEY, lid int, w text)
----
ok CREATE TABLE

CREATE INDEX r_lid ON r (lid)
----
ok CREATE INDEX

INSERT INTO l VALUES (1, 'a'), (2, 'b'), (3, 'c')
----
ok INSERT 0 3

INSERT INTO r VALUES (10, 1, 'x'), (11, 1, 'y'), (12, 4, 'z'), (13, NULL, 'n')
----
ok INSERT 0 4

SELECT l.id, l.v, r.id, r.w FROM l RIGHT JOIN r ON r.lid = l.id ORDER BY r.id
----
1 | a | 10 | x
1 | a | 11 | y
NULL | NULL | 12 | z
NULL | NULL | 13 | n

SELECT l.v, r.w FROM l RIGHT OUTER JOIN r ON r.lid = l.id AND l.v <> 'a' ORDER BY r.id
----
NULL | x
NULL | y
NULL | z
NULL | n

SELECT * FROM l RIGHT JOIN r ON r.lid = l.id WHERE l.id IS NULL ORDER BY r.id
----
NULL | NULL | 12 | 4 | z
NULL | NULL | 13 | NULL | n

SELECT count(*), count(l.id) FROM l RIGHT JOIN r ON l.id = r.lid
----
4 | 2

SELECT l.v, r.w FROM r RIGHT JOIN l ON r.lid = l.id ORDER BY l.id, r.w
----
a | x
a | y
b | NULL
c | NULL

SELECT l.v, r.w, l2.v FROM l RIGHT JOIN r ON r.lid = l.id LEFT JOIN l l2 ON l2.id = r.lid + 1 ORDER BY r.id
----
a | x | b
a | y | b
NULL | z | NULL
NULL | n | NULL

SELECT id, v, w FROM l RIGHT JOIN (SELECT lid AS id, w FROM r) s USING (id) ORDER BY w
----
NULL | NULL | n
1 | a | x
1 | a | y
4 | NULL | z

-- A RIGHT JOIN whose left side is itself a join is refused (PostgreSQL returns a | x, a | y,
-- NULL | NULL, NULL | NULL).
SELECT l.v, r.w FROM l JOIN r ON r.lid = l.id RIGHT JOIN l l3 ON l3.id = l.id ORDER BY 1, 2
----
error 0A000

SELECT l.id, l.v, r.id, r.w FROM l FULL JOIN r ON r.lid = l.id ORDER BY l.id, r.id
----
1 | a | 10 | x
1 | a | 11 | y
2 | b | NULL | NULL
3 | c | NULL | NULL
NULL | NULL | 12 | z
NULL | NULL | 13 | n

SELECT l.v, r.w FROM l FULL OUTER JOIN r ON r.lid = l.id AND r.w <> 'y' ORDER BY 1, 2
----
a | x
b | NULL
c | NULL
NULL | n
NULL | y
NULL | z

SELECT count(*), count(l.id), count(r.id) FROM l FULL JOIN r ON false
----
7 | 3 | 4

SELECT * FROM l FULL JOIN r ON r.lid = l.id WHERE l.id IS NULL OR r.id IS NULL ORDER BY l.id, r.id
----
2 | b | NULL | NULL | NULL
3 | c | NULL | NULL | NULL
NULL | NULL | 12 | 4 | z
NULL | NULL | 13 | NULL | n

SELECT coalesce(l.id, r.lid) AS k, l.v, r.w FROM l FULL JOIN r ON r.lid = l.id LEFT JOIN l l2 ON l2.id = r.lid ORDER BY k, r.w
----
1 | a | x
1 | a | y
2 | b | NULL
3 | c | NULL
4 | NULL | z
NULL | NULL | n

SELECT a.x, b.y FROM (VALUES (1), (2)) a(x) FULL JOIN (VALUES (2), (3)) b(y) ON a.x = b.y ORDER BY a.x, b.y
----
1 | NULL
2 | 2
NULL | 3

SELECT l.v, count(r.id) FROM l FULL JOIN r ON r.lid = l.id GROUP BY l.v ORDER BY l.v
----
a | 2
b | 0
c | 0
NULL | 2

-- FULL JOIN ... USING is refused (PostgreSQL merges the columns with coalesce).
SELECT * FROM l FULL JOIN r USING (id)
----
error 0A000
