-- ALTER TABLE: instant schema versions and the rewrites; the one-session results are
-- PostgreSQL 15's for the same statements (checked with psql).
CREATE TABLE people (id INT PRIMARY KEY, age SMALLINT, nick VARCHAR(5), note TEXT)
----
ok CREATE TABLE

INSERT INTO people VALUES (1, 30, 'al', 'one'), (2, NULL, 'bo', 'two'), (3, 41, NULL, NULL)
----
ok INSERT 0 3

ALTER TABLE people ADD COLUMN score INT DEFAULT 7
----
ok ALTER TABLE

SELECT * FROM people ORDER BY id
----
1 | 30 | al | one | 7
2 | NULL | bo | two | 7
3 | 41 | NULL | NULL | 7

INSERT INTO people (id) VALUES (4) RETURNING *
----
4 | NULL | NULL | NULL | 7

ALTER TABLE people ADD COLUMN tag TEXT
----
ok ALTER TABLE

ALTER TABLE people ADD COLUMN tag TEXT
----
error 42701

ALTER TABLE people ADD COLUMN IF NOT EXISTS tag TEXT
----
ok ALTER TABLE

ALTER TABLE people ADD COLUMN born DATE DEFAULT DATE '2000-01-02', ADD COLUMN ok BOOLEAN DEFAULT true
----
ok ALTER TABLE

SELECT id, score, tag, born, ok FROM people ORDER BY id
----
1 | 7 | NULL | 2000-01-02 | t
2 | 7 | NULL | 2000-01-02 | t
3 | 7 | NULL | 2000-01-02 | t
4 | 7 | NULL | 2000-01-02 | t

UPDATE people SET score = score + 1 WHERE id = 1 RETURNING id, score, born
----
1 | 8 | 2000-01-02

ALTER TABLE people DROP COLUMN nick
----
ok ALTER TABLE

SELECT * FROM people ORDER BY id
----
1 | 30 | one | 8 | NULL | 2000-01-02 | t
2 | NULL | two | 7 | NULL | 2000-01-02 | t
3 | 41 | NULL | 7 | NULL | 2000-01-02 | t
4 | NULL | NULL | 7 | NULL | 2000-01-02 | t

SELECT nick FROM people
----
error 42703

ALTER TABLE people DROP COLUMN nick
----
error 42703

ALTER TABLE people DROP COLUMN IF EXISTS nick
----
ok ALTER TABLE

INSERT INTO people VALUES (5, 50, 'five', 55, 'x', DATE '2020-02-02', false)
----
ok INSERT 0 1

SELECT * FROM people WHERE id = 5
----
5 | 50 | five | 55 | x | 2020-02-02 | f

ALTER TABLE people RENAME COLUMN note TO remark
----
ok ALTER TABLE

SELECT remark FROM people WHERE id = 1
----
one

SELECT note FROM people
----
error 42703

ALTER TABLE people RENAME COLUMN remark TO age
----
error 42701

ALTER TABLE people RENAME COLUMN missing TO other
----
error 42703

ALTER TABLE people ALTER COLUMN age TYPE INT
----
ok ALTER TABLE

UPDATE people SET age = 100000 WHERE id = 1
----
ok UPDATE 1

ALTER TABLE people ALTER COLUMN age TYPE BIGINT
----
ok ALTER TABLE

UPDATE people SET age = 10000000000 WHERE id = 2
----
ok UPDATE 1

SELECT id, age FROM people ORDER BY id
----
1 | 100000
2 | 10000000000
3 | 41
4 | NULL
5 | 50

ALTER TABLE people ALTER COLUMN age SET DEFAULT 42
----
ok ALTER TABLE

INSERT INTO people (id) VALUES (6) RETURNING id, age, score
----
6 | 42 | 7

ALTER TABLE people ALTER COLUMN age DROP DEFAULT
----
ok ALTER TABLE

INSERT INTO people (id) VALUES (7) RETURNING id, age
----
7 | NULL

ALTER TABLE people ALTER COLUMN age SET NOT NULL
----
error 23502

UPDATE people SET age = 0 WHERE age IS NULL
----
ok UPDATE 2

ALTER TABLE people ALTER COLUMN age SET NOT NULL
----
ok ALTER TABLE

INSERT INTO people (id) VALUES (8)
----
error 23502

ALTER TABLE people ALTER COLUMN age DROP NOT NULL
----
ok ALTER TABLE

ALTER TABLE people ALTER COLUMN id DROP NOT NULL
----
error 42P16

ALTER TABLE people ALTER COLUMN score TYPE TEXT
----
ok ALTER TABLE

SELECT id, score FROM people ORDER BY id
----
1 | 8
2 | 7
3 | 7
4 | 7
5 | 55
6 | 7
7 | 7

ALTER TABLE people ALTER COLUMN remark TYPE INT
----
error 42804

ALTER TABLE people ALTER COLUMN age TYPE SMALLINT
----
error 22003

ALTER TABLE people RENAME TO persons
----
ok ALTER TABLE

SELECT count(*) FROM people
----
error 42P01

SELECT count(*) FROM persons
----
7

ALTER TABLE persons ADD CONSTRAINT persons_tag_key UNIQUE (tag)
----
ok ALTER TABLE

ALTER TABLE persons ADD UNIQUE (born)
----
error 23505

ALTER TABLE persons DROP CONSTRAINT persons_tag_key
----
ok ALTER TABLE

ALTER TABLE persons DROP CONSTRAINT nope
----
error 42704

ALTER TABLE persons DROP CONSTRAINT IF EXISTS nope
----
ok ALTER TABLE

ALTER TABLE persons DROP CONSTRAINT people_pkey
----
ok ALTER TABLE

INSERT INTO persons (id, age) VALUES (1, 1)
----
ok INSERT 0 1

SELECT id, age FROM persons ORDER BY id, age
----
1 | 1
1 | 100000
2 | 10000000000
3 | 41
4 | 0
5 | 50
6 | 42
7 | 0

ALTER TABLE persons ADD PRIMARY KEY (id)
----
error 23505

DELETE FROM persons WHERE id = 1 AND age = 1
----
ok DELETE 1

ALTER TABLE persons ADD PRIMARY KEY (id)
----
ok ALTER TABLE

ALTER TABLE persons ADD COLUMN must INT NOT NULL
----
error 23502

ALTER TABLE persons ADD COLUMN must INT NOT NULL DEFAULT 3
----
ok ALTER TABLE

ALTER TABLE persons DROP COLUMN id
----
ok ALTER TABLE

SELECT * FROM persons ORDER BY age
----
0 | NULL | 7 | NULL | 2000-01-02 | t | 3
0 | NULL | 7 | NULL | 2000-01-02 | t | 3
41 | NULL | 7 | NULL | 2000-01-02 | t | 3
42 | NULL | 7 | NULL | 2000-01-02 | t | 3
50 | five | 55 | x | 2020-02-02 | f | 3
100000 | one | 8 | NULL | 2000-01-02 | t | 3
10000000000 | two | 7 | NULL | 2000-01-02 | t | 3

-- PostgreSQL shows born's default deparsed ('2000-01-02'::date); Engram keeps it as written.
SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_name = 'persons' ORDER BY ordinal_position
----
age | bigint | YES | NULL
remark | text | YES | NULL
score | text | YES | 7
tag | text | YES | NULL
born | date | YES | DATE '2000-01-02'
ok | boolean | YES | true
must | integer | NO | 3

ALTER TABLE IF EXISTS nope ADD COLUMN x INT
----
ok ALTER TABLE

ALTER TABLE nope ADD COLUMN x INT
----
error 42P01

CREATE TABLE empty (a INT)
----
ok CREATE TABLE

ALTER TABLE empty ADD COLUMN b INT NOT NULL
----
ok ALTER TABLE

INSERT INTO empty VALUES (1, NULL)
----
error 23502

INSERT INTO empty VALUES (1, 2)
----
ok INSERT 0 1

SELECT * FROM empty
----
1 | 2

-- Two sessions: an ALTER TABLE neither waits for nor blocks other transactions; one that
-- began before it reads the version it began with and cannot write the table (40001).
CREATE TABLE acct (id INT PRIMARY KEY, bal INT, note TEXT)
----
ok CREATE TABLE

INSERT INTO acct VALUES (1, 10, 'a'), (2, 20, 'b')
----
ok INSERT 0 2

@b BEGIN ISOLATION LEVEL REPEATABLE READ
----
ok BEGIN

@b SELECT * FROM acct ORDER BY id
----
1 | 10 | a
2 | 20 | b

ALTER TABLE acct ADD COLUMN flag TEXT DEFAULT 'new'
----
ok ALTER TABLE

SELECT * FROM acct ORDER BY id
----
1 | 10 | a | new
2 | 20 | b | new

@b SELECT * FROM acct ORDER BY id
----
1 | 10 | a
2 | 20 | b

@b UPDATE acct SET bal = 11 WHERE id = 1
----
error 40001

@b ROLLBACK
----
ok ROLLBACK

@b UPDATE acct SET bal = 11 WHERE id = 1 RETURNING *
----
1 | 11 | a | new

@b BEGIN
----
ok BEGIN

@b SELECT id, bal FROM acct WHERE id = 2
----
2 | 20

ALTER TABLE acct ALTER COLUMN bal TYPE BIGINT
----
ok ALTER TABLE

UPDATE acct SET bal = 5000000000 WHERE id = 2
----
ok UPDATE 1

ALTER TABLE acct DROP COLUMN note
----
ok ALTER TABLE

INSERT INTO acct VALUES (3, 30, 'three')
----
ok INSERT 0 1

@b SELECT * FROM acct ORDER BY id
----
1 | 11 | a | new
2 | 5000000000 | b | new
3 | 30 | NULL | three

@b INSERT INTO acct VALUES (4, 40, 'four', 'x')
----
error 40001

@b ROLLBACK
----
ok ROLLBACK

SELECT * FROM acct ORDER BY id
----
1 | 11 | new
2 | 5000000000 | new
3 | 30 | three

@b BEGIN
----
ok BEGIN

@b ALTER TABLE acct ADD COLUMN extra INT DEFAULT 1
----
ok ALTER TABLE

@b SELECT * FROM acct WHERE id = 1
----
1 | 11 | new | 1

SELECT * FROM acct WHERE id = 1
----
1 | 11 | new

INSERT INTO acct VALUES (4, 40, 'four')
----
ok INSERT 0 1

@b COMMIT
----
ok COMMIT

SELECT * FROM acct ORDER BY id
----
1 | 11 | new | 1
2 | 5000000000 | new | 1
3 | 30 | three | 1
4 | 40 | four | 1

@b BEGIN
----
ok BEGIN

@b ALTER TABLE acct ADD COLUMN lost INT
----
ok ALTER TABLE

ALTER TABLE acct ADD COLUMN won INT
----
ok ALTER TABLE

@b COMMIT
----
error 40001

SELECT * FROM acct WHERE id = 1
----
1 | 11 | new | 1 | NULL

CREATE TABLE side (k INT PRIMARY KEY)
----
ok CREATE TABLE

@b BEGIN
----
ok BEGIN

@b UPDATE acct SET bal = 12 WHERE id = 1
----
ok UPDATE 1

ALTER TABLE side ADD COLUMN v TEXT DEFAULT 'v'
----
ok ALTER TABLE

INSERT INTO side VALUES (1)
----
ok INSERT 0 1

@b COMMIT
----
ok COMMIT

SELECT * FROM side
----
1 | v

@b SELECT id, bal FROM acct WHERE id = 1
----
1 | 12

BEGIN
----
ok BEGIN

ALTER TABLE acct RENAME TO accounts
----
ok ALTER TABLE

ALTER TABLE accounts ADD COLUMN later INT DEFAULT 5
----
ok ALTER TABLE

SELECT id, later FROM accounts WHERE id = 1
----
1 | 5

@b SELECT id, bal FROM acct WHERE id = 1
----
1 | 12

ROLLBACK
----
ok ROLLBACK

SELECT * FROM accounts
----
error 42P01

SELECT id, bal FROM acct WHERE id = 1
----
1 | 12

BEGIN
----
ok BEGIN

ALTER TABLE acct RENAME TO accounts
----
ok ALTER TABLE

ALTER TABLE accounts RENAME COLUMN bal TO balance
----
ok ALTER TABLE

ALTER TABLE accounts ADD COLUMN later INT DEFAULT 5
----
ok ALTER TABLE

COMMIT
----
ok COMMIT

SELECT id, balance, later FROM accounts WHERE id = 1
----
1 | 12 | 5

SELECT id FROM acct
----
error 42P01

-- A prepared statement whose rows a table change alters fails as PostgreSQL's does.
CREATE TABLE prep (id INT PRIMARY KEY, v INT)
----
ok CREATE TABLE

INSERT INTO prep VALUES (1, 10)
----
ok INSERT 0 1

PREPARE star AS SELECT * FROM prep
----
ok PREPARE

PREPARE one AS SELECT v FROM prep WHERE id = 1
----
ok PREPARE

ALTER TABLE prep ADD COLUMN w INT DEFAULT 3
----
ok ALTER TABLE

EXECUTE star
----
error 0A000

EXECUTE one
----
10

ALTER TABLE prep ALTER COLUMN v TYPE BIGINT
----
ok ALTER TABLE

EXECUTE one
----
error 0A000
