-- Strings of several statements are one implicit transaction; read-only transactions;
-- transaction modes and RESET, as PostgreSQL 15 answers the same statements.
CREATE TABLE m (id INT PRIMARY KEY)
----
ok CREATE TABLE

-- The duplicate rolls back the whole string, as PostgreSQL does.
INSERT INTO m VALUES (1); INSERT INTO m VALUES (2); INSERT INTO m VALUES (1)
----
error 23505

SELECT count(*) FROM m
----
0

-- COMMIT inside a string ends its statements so far; the rest are another transaction.
INSERT INTO m VALUES (3); COMMIT; INSERT INTO m VALUES (4); INSERT INTO m VALUES (3)
----
error 23505

SELECT sum(id) FROM m
----
3

-- BEGIN makes the implicit transaction explicit: 5 commits with 6, then 7 on its own.
INSERT INTO m VALUES (5); BEGIN; INSERT INTO m VALUES (6); COMMIT; INSERT INTO m VALUES (7)
----
ok INSERT 0 1

SELECT sum(id) FROM m
----
21

INSERT INTO m VALUES (8); ROLLBACK; SELECT 1
----
1

SELECT sum(id) FROM m
----
21

-- A failed statement after DDL in the same string takes the DDL back too.
CREATE TABLE m2 (a INT); INSERT INTO m2 VALUES ('x')
----
error 22P02

SELECT * FROM m2
----
error 42P01

-- A string that leaves a block open leaves it open.
BEGIN; INSERT INTO m VALUES (9)
----
ok INSERT 0 1

ROLLBACK
----
ok ROLLBACK

SELECT sum(id) FROM m
----
21

SET default_transaction_read_only = on
----
ok SET

SHOW transaction_read_only
----
on

INSERT INTO m VALUES (10)
----
error 25006

CREATE TABLE x (a INT)
----
error 25006

SELECT count(*) FROM m
----
4

BEGIN READ WRITE
----
ok BEGIN

INSERT INTO m VALUES (10)
----
ok INSERT 0 1

COMMIT
----
ok COMMIT

RESET default_transaction_read_only
----
ok RESET

SHOW default_transaction_read_only
----
off

BEGIN READ ONLY
----
ok BEGIN

SHOW transaction_read_only
----
on

CREATE TABLE x (a INT)
----
error 25006

ROLLBACK
----
ok ROLLBACK

BEGIN
----
ok BEGIN

SET TRANSACTION READ ONLY
----
ok SET

UPDATE m SET id = id WHERE id = 10
----
error 25006

ROLLBACK
----
ok ROLLBACK

BEGIN
----
ok BEGIN

SELECT 1
----
1

SET TRANSACTION READ ONLY
----
ok SET

SET TRANSACTION READ WRITE
----
error 25001

ROLLBACK
----
ok ROLLBACK

BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE
----
ok BEGIN

SHOW transaction_isolation
----
serializable

SHOW transaction_read_only
----
on

COMMIT
----
ok COMMIT

START TRANSACTION READ WRITE ISOLATION LEVEL REPEATABLE READ NOT DEFERRABLE
----
ok BEGIN

SHOW transaction_isolation
----
repeatable read

COMMIT
----
ok COMMIT

BEGIN ISOLATION LEVEL SOMETIMES
----
error 42601

SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ
----
ok SET

SHOW default_transaction_isolation
----
repeatable read

RESET default_transaction_isolation
----
ok RESET

SHOW default_transaction_isolation
----
read committed

SET default_transaction_isolation = 'serializable'
----
ok SET

SET statement_timeout = '5s'
----
ok SET

RESET ALL
----
ok RESET

SHOW default_transaction_isolation
----
read committed

SHOW statement_timeout
----
0
