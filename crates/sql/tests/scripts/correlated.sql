-- Correlated subqueries (EXISTS, IN, scalar; nested two levels deep), run for each row of the
-- query around them; every result is PostgreSQL 15's.

CREATE TABLE users (id int PRIMARY KEY, name text)
----
ok CREATE TABLE

CREATE TABLE orders (id int PRIMARY KEY, user_id int, amount int)
----
ok CREATE TABLE

CREATE INDEX orders_user ON orders (user_id)
----
ok CREATE INDEX

INSERT INTO users VALUES (1, 'ann'), (2, 'bob'), (3, 'cid'), (4, NULL)
----
ok INSERT 0 4

INSERT INTO orders VALUES (10, 1, 5), (11, 1, 7), (12, 2, 3), (13, NULL, 9)
----
ok INSERT 0 4

SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id) ORDER BY name
----
ann
bob

SELECT name FROM users u WHERE NOT EXISTS (SELECT * FROM orders o WHERE o.user_id = u.id) ORDER BY name
----
cid
NULL

SELECT u.name, (SELECT sum(amount) FROM orders o WHERE o.user_id = u.id) AS total FROM users u ORDER BY u.id
----
ann | 12
bob | 3
cid | NULL
NULL | NULL

SELECT u.name, (SELECT count(*) FROM orders WHERE user_id = u.id) FROM users u ORDER BY 2 DESC, 1
----
ann | 2
bob | 1
cid | 0
NULL | 0

SELECT id FROM users u WHERE u.id IN (SELECT user_id FROM orders o WHERE o.amount > u.id * 4) ORDER BY id
----
1

SELECT id FROM users u WHERE 3 NOT IN (SELECT amount FROM orders o WHERE o.user_id = u.id) ORDER BY id
----
1
3
4

SELECT o.id FROM orders o WHERE o.amount = (SELECT max(amount) FROM orders o2 WHERE o2.user_id = o.user_id) ORDER BY 1
----
11
12

SELECT u.name FROM users u WHERE (SELECT amount FROM orders o WHERE o.user_id = u.id) > 2
----
error 21000

SELECT u.id FROM users u JOIN orders o ON o.user_id = u.id WHERE o.amount > (SELECT min(amount) FROM orders x WHERE x.user_id = u.id) ORDER BY 1
----
1

SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id AND EXISTS (SELECT 1 FROM users v WHERE v.id = o.user_id AND v.name = u.name)) ORDER BY 1
----
ann
bob

SELECT count(*) FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id)
----
2

SELECT (SELECT u.name) FROM users u ORDER BY id
----
ann
bob
cid
NULL

SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id LIMIT 0)
----

SELECT * FROM users WHERE id IN (SELECT id, id FROM users)
----
error 42601

SELECT * FROM (SELECT id FROM users u WHERE EXISTS (SELECT 1 FROM orders WHERE user_id = u.id)) s ORDER BY 1
----
1
2
