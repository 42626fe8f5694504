-- Transactions, failed blocks, isolation, settings, prepared statements, DDL rollback.
CREATE TABLE acct (id INT PRIMARY KEY, balance BIGINT NOT NULL)
----
ok CREATE TABLE

INSERT INTO acct VALUES (1, 100), (2, 100)
----
ok INSERT 0 2

BEGIN
----
ok BEGIN

UPDATE acct SET balance = balance - 10 WHERE id = 1
----
ok UPDATE 1

@b SELECT balance FROM acct WHERE id = 1
----
100

SELECT * FROM nowhere
----
error 42P01

SELECT 1
----
error 25P02

COMMIT
----
ok ROLLBACK

SELECT balance FROM acct WHERE id = 1
----
100

START TRANSACTION ISOLATION LEVEL SERIALIZABLE
----
ok BEGIN

SHOW transaction_isolation
----
serializable

SELECT balance FROM acct WHERE id = 1
----
100

@b UPDATE acct SET balance = 50 WHERE id = 1
----
ok UPDATE 1

UPDATE acct SET balance = balance + 1 WHERE id = 2
----
error 40001

COMMIT
----
ok ROLLBACK

SELECT balance FROM acct ORDER BY id
----
50
100

SHOW transaction_isolation
----
read committed

SET default_transaction_isolation = 'repeatable read'
----
ok SET

SHOW default_transaction_isolation
----
repeatable read

SET application_name = 'golden'
----
ok SET

SHOW application_name
----
golden

SHOW no_such_setting
----
error 42704

PREPARE get (int) AS SELECT balance FROM acct WHERE id = $1
----
ok PREPARE

EXECUTE get (2)
----
100

PREPARE pick AS SELECT id FROM acct WHERE $1 IN (1, 2) AND balance < $2 ORDER BY id
----
ok PREPARE

EXECUTE pick (2, 10000000000)
----
1
2

EXECUTE pick (2, 99999999999999999999)
----
error 22003

DEALLOCATE get
----
ok DEALLOCATE

EXECUTE get (2)
----
error 26000

BEGIN
----
ok BEGIN

CREATE TABLE temp_t (a INT)
----
ok CREATE TABLE

INSERT INTO temp_t VALUES (1)
----
ok INSERT 0 1

DROP TABLE acct
----
ok DROP TABLE

ROLLBACK
----
ok ROLLBACK

SELECT * FROM temp_t
----
error 42P01

SELECT count(*) FROM acct
----
2

BEGIN READ ONLY
----
ok BEGIN

DELETE FROM acct
----
error 25006

ROLLBACK
----
ok ROLLBACK

-- Outside a transaction block, as PostgreSQL.
SAVEPOINT s1
----
error 25P01

-- READ COMMITTED: an UPDATE of one row by its key applies to the newest committed row, as in
-- PostgreSQL (where b's UPDATE would wait for a's lock): both increments count.
CREATE TABLE counter (id INT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)
----
ok CREATE TABLE

INSERT INTO counter VALUES (1, 0, 'x')
----
ok INSERT 0 1

@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@b UPDATE counter SET n = n + 10 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
ok COMMIT

SELECT n FROM counter WHERE id = 1
----
11

-- Once a has read the row it wrote (12), its commit cannot make it something else.
@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a SELECT n FROM counter WHERE id = 1
----
12

@b UPDATE counter SET n = n + 100 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
error 40001

-- A WHERE clause beyond the key (which the newer row might not satisfy) and RETURNING (whose
-- value the client has) are not applied again: the later commit fails as before.
@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1 AND note = 'x'
----
ok UPDATE 1

@b UPDATE counter SET note = 'y' WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
error 40001

@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1 RETURNING n
----
112

@b UPDATE counter SET n = n + 1000 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
error 40001

-- Above READ COMMITTED the first committer wins.
@a BEGIN ISOLATION LEVEL REPEATABLE READ
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@b UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
error 40001

SELECT n, note FROM counter WHERE id = 1
----
1112 | y

-- Seen through a secondary index, too.
CREATE INDEX counter_note ON counter (note)
----
ok CREATE INDEX

@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a SELECT n FROM counter WHERE note = 'y'
----
1113

@b UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
error 40001

@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@b UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
ok COMMIT

SELECT n FROM counter WHERE note = 'y'
----
1115

-- Two UPDATEs of the row in one transaction: the second was computed from the first's row.
@a BEGIN ISOLATION LEVEL READ COMMITTED
----
ok BEGIN

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@b UPDATE counter SET n = n + 1 WHERE id = 1
----
ok UPDATE 1

@a COMMIT
----
error 40001

SELECT n FROM counter WHERE id = 1
----
1116

-- pg_sleep sleeps in steps that statement_timeout (and cancel) interrupt.
@t SET statement_timeout = '50ms'
----
ok SET

@t SELECT pg_sleep(5)
----
error 57014

@t SELECT pg_sleep(0.01), pg_sleep(-1)
----
NULL | NULL

-- A SERIALIZABLE UPDATE over a primary-key range changes each row in one pass; a row that
-- fails half-way (out of range) fails the statement and the block, and nothing changes.
CREATE TABLE ranged (id INT PRIMARY KEY, n SMALLINT, note TEXT)
----
ok CREATE TABLE

INSERT INTO ranged VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 32000, 'c'), (4, 40, 'd'), (5, 50, 'e')
----
ok INSERT 0 5

EXPLAIN UPDATE ranged SET n = n + 1 WHERE id BETWEEN 1 AND 2
----
Update on ranged
  ->  Index Scan on ranged using ranged_pkey (id)

BEGIN ISOLATION LEVEL SERIALIZABLE
----
ok BEGIN

UPDATE ranged SET n = n + 1 WHERE id BETWEEN 1 AND 4 AND note <> 'b' RETURNING id, n
----
1 | 11
3 | 32001
4 | 41

UPDATE ranged SET n = n + 1000 WHERE id >= 2 RETURNING id
----
error 22003

COMMIT
----
ok ROLLBACK

BEGIN ISOLATION LEVEL SERIALIZABLE
----
ok BEGIN

UPDATE ranged SET note = note || '!' WHERE id > 3
----
ok UPDATE 2

@other UPDATE ranged SET n = 0 WHERE id = 5
----
ok UPDATE 1

COMMIT
----
error 40001

SELECT id, n, note FROM ranged ORDER BY id
----
1 | 10 | a
2 | 20 | b
3 | 32000 | c
4 | 40 | d
5 | 0 | e
