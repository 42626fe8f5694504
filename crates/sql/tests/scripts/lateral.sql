-- LATERAL subqueries and functions in FROM that read the items before them, with the results of PostgreSQL 15

CREATE TABLE authors (id int PRIMARY KEY, name text)
----
ok CREATE TABLE

CREATE TABLE books (id int PRIMARY KEY, author int, title text, year int, meta jsonb)
----
ok CREATE TABLE

INSERT INTO authors VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')
----
ok INSERT 0 3

INSERT INTO books VALUES (1, 1, 'a1', 2001, '{"tags":["x","y"]}'), (2, 1, 'a2', 2005, '{"tags":[]}'), (3, 2, 'b1', 1999, '{"tags":["z"]}'), (4, 1, 'a3', 2010, NULL)
----
ok INSERT 0 4

SELECT a.name, b.title FROM authors a, LATERAL (SELECT title FROM books WHERE author = a.id ORDER BY year DESC LIMIT 2) b ORDER BY a.name, b.title
----
ann | a2
ann | a3
bob | b1

SELECT a.name, b.title FROM authors a LEFT JOIN LATERAL (SELECT title FROM books WHERE author = a.id ORDER BY year LIMIT 1) b ON true ORDER BY a.name
----
ann | a1
bob | b1
cy | NULL

SELECT a.name, s.n, s.last FROM authors a CROSS JOIN LATERAL (SELECT count(*) AS n, max(year) AS last FROM books WHERE author = a.id) s ORDER BY a.id
----
ann | 3 | 2010
bob | 1 | 1999
cy | 0 | NULL

SELECT b.title, t FROM books b, jsonb_array_elements_text(b.meta -> 'tags') t ORDER BY b.id, t
----
a1 | x
a1 | y
b1 | z

SELECT b.title, t FROM books b LEFT JOIN LATERAL jsonb_array_elements_text(b.meta -> 'tags') t ON true ORDER BY b.id, t
----
a1 | x
a1 | y
a2 | NULL
b1 | z
a3 | NULL

SELECT b.title, e.key FROM books b, LATERAL jsonb_each(b.meta) e ORDER BY b.id
----
a1 | tags
a2 | tags
b1 | tags

SELECT g, s FROM generate_series(1, 3) g, generate_series(1, g) s ORDER BY g, s
----
1 | 1
2 | 1
2 | 2
3 | 1
3 | 2
3 | 3

SELECT a.id, x.v FROM authors a, unnest(ARRAY[a.id, a.id * 10]) x(v) ORDER BY a.id, x.v
----
1 | 1
1 | 10
2 | 2
2 | 20
3 | 3
3 | 30

SELECT a.id, u.v, u.o FROM authors a, unnest(ARRAY['p', 'q']) WITH ORDINALITY u(v, o) WHERE a.id = 1 ORDER BY u.o
----
1 | p | 1
1 | q | 2

SELECT a.name, l.m FROM authors a, LATERAL (SELECT a.id * 100 AS m) l WHERE l.m > 100 ORDER BY 1
----
bob | 200
cy | 300

SELECT a.name FROM authors a WHERE EXISTS (SELECT 1 FROM LATERAL (SELECT a.id AS v) l WHERE l.v = 2)
----
bob

SELECT (SELECT sum(l.m) FROM authors a, LATERAL (SELECT a.id * o.x AS m) l) FROM (VALUES (1), (2)) o(x) ORDER BY 1
----
6
12

SELECT a.name, l.c FROM authors a, LATERAL (SELECT count(*) AS c FROM books b WHERE b.author = a.id HAVING count(*) > 1) l
----
ann | 3

SELECT * FROM authors a, (SELECT a.id) x
----
error 42P01

SELECT a.name, b.title FROM authors a JOIN LATERAL (SELECT * FROM books WHERE author = a.id) b ON b.year > 2002 ORDER BY b.title
----
ann | a2
ann | a3

CREATE TABLE pairs (q1 bigint, q2 bigint)
----
ok CREATE TABLE

INSERT INTO pairs VALUES (123, 456), (123, 4567890123456789), (4567890123456789, 123)
----
ok INSERT 0 3

SELECT * FROM generate_series(120, 125) g, LATERAL (SELECT * FROM pairs a WHERE g = q1 UNION ALL SELECT * FROM pairs b WHERE g = q2) ss ORDER BY 1, 2, 3
----
123 | 123 | 456
123 | 123 | 4567890123456789
123 | 4567890123456789 | 123

SELECT * FROM ((SELECT 2 AS v) UNION ALL (SELECT 3 AS v)) AS q1 CROSS JOIN LATERAL ((SELECT * FROM ((SELECT 4 AS v) UNION ALL (SELECT 5 AS v)) AS q3) UNION ALL (SELECT q1.v)) AS q2 ORDER BY 1, 2
----
2 | 2
2 | 4
2 | 5
3 | 3
3 | 4
3 | 5

SELECT * FROM (SELECT 0 AS z) AS t1 LEFT JOIN (SELECT true AS a) AS t2 ON true, LATERAL (SELECT true AS b UNION ALL SELECT a AS b) AS t3 WHERE b
----
0 | t | t
0 | t | t
