-- Foreign keys: references checked, NO ACTION, CASCADE, SET NULL, ON UPDATE CASCADE, MATCH FULL, self-references, ALTER TABLE ADD and DROP, DROP and TRUNCATE of referenced tables, the catalog's views of them, with the results of PostgreSQL 15

CREATE TABLE users (id int PRIMARY KEY, name text UNIQUE)
----
ok CREATE TABLE

CREATE TABLE orders (id int PRIMARY KEY, user_id int REFERENCES users(id), note text)
----
ok CREATE TABLE

CREATE TABLE items (id int PRIMARY KEY, order_id int NOT NULL, CONSTRAINT items_order_fk FOREIGN KEY (order_id) REFERENCES orders ON DELETE CASCADE)
----
ok CREATE TABLE

CREATE TABLE tags (id serial PRIMARY KEY, user_name text REFERENCES users(name) ON DELETE SET NULL ON UPDATE CASCADE)
----
ok CREATE TABLE

INSERT INTO users VALUES (1, 'ann'), (2, 'bob')
----
ok INSERT 0 2

INSERT INTO orders VALUES (10, 1, 'a'), (11, 2, 'b'), (12, NULL, 'none')
----
ok INSERT 0 3

INSERT INTO orders VALUES (13, 3, 'bad')
----
error 23503

INSERT INTO items VALUES (100, 10), (101, 10), (102, 11)
----
ok INSERT 0 3

INSERT INTO items VALUES (103, 99)
----
error 23503

INSERT INTO tags (user_name) VALUES ('ann'), ('bob'), (NULL)
----
ok INSERT 0 3

INSERT INTO tags (user_name) VALUES ('zed')
----
error 23503

DELETE FROM users WHERE id = 1
----
error 23503

UPDATE orders SET user_id = 5 WHERE id = 10
----
error 23503

UPDATE orders SET user_id = 2 WHERE id = 10
----
ok UPDATE 1

SELECT id, user_id FROM orders ORDER BY id
----
10 | 2
11 | 2
12 | NULL

DELETE FROM orders WHERE id = 10
----
ok DELETE 1

SELECT id, order_id FROM items ORDER BY id
----
102 | 11

UPDATE users SET name = 'ANN' WHERE id = 1
----
ok UPDATE 1

SELECT id, user_name FROM tags ORDER BY id
----
1 | ANN
2 | bob
3 | NULL

UPDATE users SET id = 7 WHERE id = 1
----
ok UPDATE 1

DELETE FROM orders WHERE user_id = 1
----
ok DELETE 0

DELETE FROM users WHERE id = 1
----
ok DELETE 0

SELECT id, user_name FROM tags ORDER BY id
----
1 | ANN
2 | bob
3 | NULL

DELETE FROM users WHERE id = 2
----
error 23503

DROP TABLE users
----
error 2BP01

TRUNCATE users
----
error 0A000

CREATE TABLE nokey (a int)
----
ok CREATE TABLE

CREATE TABLE bad1 (x int REFERENCES nokey)
----
error 42704

CREATE TABLE bad2 (x int REFERENCES users(id, name))
----
error 42830

CREATE TABLE bad3 (x text REFERENCES users(id))
----
error 42804

CREATE TABLE bad4 (x int REFERENCES missing(id))
----
error 42P01

CREATE TABLE bad5 (x int REFERENCES users(nope))
----
error 42703

CREATE TABLE tree (id int PRIMARY KEY, parent int REFERENCES tree ON DELETE CASCADE)
----
ok CREATE TABLE

INSERT INTO tree VALUES (1, NULL), (2, 1), (3, 2), (4, 1), (5, NULL)
----
ok INSERT 0 5

DELETE FROM tree WHERE id = 1
----
ok DELETE 1

SELECT id FROM tree ORDER BY id
----
5

CREATE TABLE late (id int PRIMARY KEY, uid int)
----
ok CREATE TABLE

INSERT INTO late VALUES (1, 2), (2, 42)
----
ok INSERT 0 2

ALTER TABLE late ADD CONSTRAINT late_uid_fkey FOREIGN KEY (uid) REFERENCES users (id) DEFERRABLE INITIALLY DEFERRED
----
error 23503

DELETE FROM late WHERE id = 2
----
ok DELETE 1

ALTER TABLE late ADD CONSTRAINT late_uid_fkey FOREIGN KEY (uid) REFERENCES users (id) DEFERRABLE INITIALLY DEFERRED
----
ok ALTER TABLE

INSERT INTO late VALUES (3, 77)
----
error 23503

ALTER TABLE late DROP CONSTRAINT late_uid_fkey
----
ok ALTER TABLE

INSERT INTO late VALUES (3, 77)
----
ok INSERT 0 1

ALTER TABLE late ADD COLUMN oid int REFERENCES orders(id)
----
ok ALTER TABLE

INSERT INTO late VALUES (4, NULL, 999)
----
error 23503

INSERT INTO late VALUES (4, NULL, 11)
----
ok INSERT 0 1

DROP TABLE items, orders
----
error 2BP01

DROP TABLE late
----
ok DROP TABLE

BEGIN
----
ok BEGIN

INSERT INTO users VALUES (50, 'x')
----
ok INSERT 0 1

CREATE TABLE kids (id int PRIMARY KEY, uid int REFERENCES users)
----
ok CREATE TABLE

INSERT INTO kids VALUES (1, 50)
----
ok INSERT 0 1

SAVEPOINT s
----
ok SAVEPOINT

DELETE FROM users WHERE id = 50
----
error 23503

ROLLBACK TO s
----
ok ROLLBACK

DELETE FROM kids
----
ok DELETE 1

DELETE FROM users WHERE id = 50
----
ok DELETE 1

COMMIT
----
ok COMMIT

SELECT count(*) FROM users WHERE id = 50
----
0

DROP TABLE users CASCADE
----
ok DROP TABLE

INSERT INTO kids VALUES (2, 12345)
----
ok INSERT 0 1

SELECT id, uid FROM kids ORDER BY id
----
2 | 12345

CREATE TABLE mf (a int, b int, PRIMARY KEY (a, b))
----
ok CREATE TABLE

CREATE TABLE mfc (x int, y int, FOREIGN KEY (x, y) REFERENCES mf MATCH FULL ON DELETE CASCADE)
----
ok CREATE TABLE

INSERT INTO mf VALUES (1, 1)
----
ok INSERT 0 1

INSERT INTO mfc VALUES (1, NULL)
----
error 23503

INSERT INTO mfc VALUES (NULL, NULL)
----
ok INSERT 0 1

INSERT INTO mfc VALUES (1, 1)
----
ok INSERT 0 1

SELECT conname, contype, confmatchtype, confdeltype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'mfc'::regclass
----
mfc_x_y_fkey | f | f | c | FOREIGN KEY (x, y) REFERENCES mf(a, b) MATCH FULL ON DELETE CASCADE

SELECT constraint_name, update_rule, delete_rule, match_option FROM information_schema.referential_constraints WHERE constraint_name = 'mfc_x_y_fkey'
----
mfc_x_y_fkey | NO ACTION | CASCADE | FULL

SELECT constraint_name, column_name, ordinal_position FROM information_schema.key_column_usage WHERE table_name = 'mfc' ORDER BY ordinal_position
----
mfc_x_y_fkey | x | 1
mfc_x_y_fkey | y | 2
