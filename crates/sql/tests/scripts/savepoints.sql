-- SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE SAVEPOINT, with the results of PostgreSQL 15

CREATE TABLE acct (id int PRIMARY KEY, owner text UNIQUE, balance int)
----
ok CREATE TABLE

CREATE INDEX acct_balance ON acct (balance)
----
ok CREATE INDEX

SAVEPOINT outside
----
error 25P01

RELEASE SAVEPOINT outside
----
error 25P01

ROLLBACK TO SAVEPOINT outside
----
error 25P01

BEGIN
----
ok BEGIN

INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50)
----
ok INSERT 0 2

SAVEPOINT a
----
ok SAVEPOINT

UPDATE acct SET balance = balance - 30 WHERE id = 1
----
ok UPDATE 1

INSERT INTO acct VALUES (3, 'cat', 10)
----
ok INSERT 0 1

SELECT * FROM acct ORDER BY id
----
1 | ann | 70
2 | bob | 50
3 | cat | 10

ROLLBACK TO SAVEPOINT a
----
ok ROLLBACK

SELECT * FROM acct ORDER BY id
----
1 | ann | 100
2 | bob | 50

SELECT id FROM acct WHERE balance = 70
----

SELECT id FROM acct WHERE owner = 'cat'
----

INSERT INTO acct VALUES (3, 'cat', 20)
----
ok INSERT 0 1

SELECT * FROM acct ORDER BY id
----
1 | ann | 100
2 | bob | 50
3 | cat | 20

COMMIT
----
ok COMMIT

SELECT * FROM acct ORDER BY id
----
1 | ann | 100
2 | bob | 50
3 | cat | 20

BEGIN
----
ok BEGIN

SAVEPOINT s1
----
ok SAVEPOINT

INSERT INTO acct VALUES (4, 'dan', 5)
----
ok INSERT 0 1

SAVEPOINT s2
----
ok SAVEPOINT

DELETE FROM acct WHERE id = 1
----
ok DELETE 1

SAVEPOINT s3
----
ok SAVEPOINT

UPDATE acct SET owner = 'bobby' WHERE id = 2
----
ok UPDATE 1

SELECT id, owner FROM acct ORDER BY id
----
2 | bobby
3 | cat
4 | dan

ROLLBACK TO s2
----
ok ROLLBACK

SELECT id, owner FROM acct ORDER BY id
----
1 | ann
2 | bob
3 | cat
4 | dan

ROLLBACK TO s3
----
error 3B001

RELEASE s1
----
error 25P02

SELECT id, owner FROM acct ORDER BY id
----
error 25P02

ROLLBACK TO s1
----
ok ROLLBACK

COMMIT
----
ok COMMIT

SELECT id, owner FROM acct ORDER BY id
----
1 | ann
2 | bob
3 | cat

BEGIN
----
ok BEGIN

SAVEPOINT dup
----
ok SAVEPOINT

INSERT INTO acct VALUES (5, 'ann', 1)
----
error 23505

SELECT 1
----
error 25P02

ROLLBACK TO SAVEPOINT dup
----
ok ROLLBACK

INSERT INTO acct VALUES (5, 'eve', 1)
----
ok INSERT 0 1

SAVEPOINT dup
----
ok SAVEPOINT

SELECT 1/0
----
error 22012

ROLLBACK TO dup
----
ok ROLLBACK

RELEASE SAVEPOINT dup
----
ok RELEASE

SELECT id, owner FROM acct ORDER BY id
----
1 | ann
2 | bob
3 | cat
5 | eve

COMMIT
----
ok COMMIT

SELECT id, owner FROM acct ORDER BY id
----
1 | ann
2 | bob
3 | cat
5 | eve

BEGIN
----
ok BEGIN

SAVEPOINT x
----
ok SAVEPOINT

SAVEPOINT x
----
ok SAVEPOINT

DELETE FROM acct WHERE id = 5
----
ok DELETE 1

ROLLBACK TO x
----
ok ROLLBACK

SELECT count(*) FROM acct
----
4

DELETE FROM acct WHERE id = 5
----
ok DELETE 1

RELEASE x
----
ok RELEASE

SELECT count(*) FROM acct
----
3

ROLLBACK TO x
----
ok ROLLBACK

SELECT count(*) FROM acct
----
4

RELEASE x
----
ok RELEASE

RELEASE x
----
error 3B001

ROLLBACK
----
ok ROLLBACK

SELECT count(*) FROM acct
----
4

BEGIN
----
ok BEGIN

INSERT INTO acct VALUES (6, 'fay', 6)
----
ok INSERT 0 1

SAVEPOINT before_ddl
----
ok SAVEPOINT

CREATE TABLE scratch (a int PRIMARY KEY)
----
ok CREATE TABLE

INSERT INTO scratch VALUES (1)
----
ok INSERT 0 1

ALTER TABLE acct ADD COLUMN note text
----
ok ALTER TABLE

SELECT * FROM acct WHERE id = 6
----
6 | fay | 6 | NULL

ROLLBACK TO before_ddl
----
ok ROLLBACK

SELECT * FROM scratch
----
error 42P01

ROLLBACK TO before_ddl
----
ok ROLLBACK

SELECT * FROM acct WHERE id = 6
----
6 | fay | 6

CREATE TABLE scratch (b text)
----
ok CREATE TABLE

INSERT INTO scratch VALUES ('kept')
----
ok INSERT 0 1

COMMIT
----
ok COMMIT

SELECT * FROM scratch
----
kept

SELECT * FROM acct ORDER BY id
----
1 | ann | 100
2 | bob | 50
3 | cat | 20
5 | eve | 1
6 | fay | 6

BEGIN
----
ok BEGIN

UPDATE acct SET balance = 0 WHERE id = 6
----
ok UPDATE 1

SAVEPOINT p
----
ok SAVEPOINT

UPDATE acct SET balance = balance + 1 WHERE id = 6
----
ok UPDATE 1

UPDATE acct SET balance = balance + 1 WHERE id = 6
----
ok UPDATE 1

SAVEPOINT q
----
ok SAVEPOINT

UPDATE acct SET balance = balance + 100 WHERE id = 6
----
ok UPDATE 1

ROLLBACK TO p
----
ok ROLLBACK

SELECT balance FROM acct WHERE id = 6
----
0

UPDATE acct SET balance = balance + 5 WHERE id = 6
----
ok UPDATE 1

ROLLBACK TO q
----
error 3B001

COMMIT
----
ok ROLLBACK

SELECT balance FROM acct WHERE id = 6
----
6
