-- DDL, types, DML with RETURNING, errors with SQLSTATEs.
CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL, price NUMERIC(8,2) DEFAULT 0, qty SMALLINT, note TEXT)
----
ok CREATE TABLE

INSERT INTO items VALUES (1, 'apple', 1.5, 10, NULL), (2, 'pear', 2.25, 5, 'ripe'), (3, 'fig', DEFAULT, 0, 'dry')
----
ok INSERT 0 3

INSERT INTO items (id, name) VALUES (4, 'kiwi') RETURNING id, price, qty
----
4 | 0.00 | NULL

SELECT * FROM items ORDER BY id
----
1 | apple | 1.50 | 10 | NULL
2 | pear | 2.25 | 5 | ripe
3 | fig | 0.00 | 0 | dry
4 | kiwi | 0.00 | NULL | NULL

INSERT INTO items VALUES (1, 'dup', 1, 1, NULL)
----
error 23505

INSERT INTO items (id) VALUES (9)
----
error 23502

INSERT INTO items VALUES (9, 'abcdefghijk', 1, 1, NULL)
----
error 22001

INSERT INTO items VALUES (9, 'x', 1, 40000, NULL)
----
error 22003

INSERT INTO items VALUES ('nine', 'x', 1, 1, NULL)
----
error 22P02

INSERT INTO items VALUES (9, 'x', 1234567.5, 1, NULL)
----
error 22003

SELECT * FROM nothing
----
error 42P01

SELECT nope FROM items
----
error 42703

SELECT id FROM items WHERE name = 1
----
error 42883

SELEC 1
----
error 42601

SELECT id FROM items UNION SELECT id FROM items ORDER BY id DESC
----
4
3
2
1

UPDATE items SET price = price * 2, note = COALESCE(note, 'none') WHERE id <= 2 RETURNING id, price, note
----
1 | 3.00 | none
2 | 4.50 | ripe

UPDATE items SET qty = qty + 1 WHERE name LIKE '%i%'
----
ok UPDATE 2

SELECT id, qty FROM items WHERE qty IS NOT NULL AND id BETWEEN 2 AND 4 ORDER BY qty DESC
----
2 | 5
3 | 1

DELETE FROM items WHERE id IN (3, 4) RETURNING name
----
fig
kiwi

SELECT count(*), sum(price), min(name), max(qty), avg(qty) FROM items
----
2 | 7.50 | apple | 10 | 7.5000000000000000

SELECT upper(name) || '-' || length(name), substr(name, 2, 3), lower('ABC'), 7 / 2, 7 % 3, 7.0 / 2 FROM items WHERE id = 1
----
APPLE-5 | ppl | abc | 3 | 1 | 3.5000000000000000

-- substr counts characters, from 1; a start before 1 shortens the length, one past the end gives ''.
SELECT substr('héllo wörld', 2, 3), substr('héllo', 0, 3), substr('héllo', -1, 3), substr('héllo', 4), substr('héllo', 9), substr('hello', 2, 0), substr('hello', 3), substr('abc', 1, 100)
----
éll | hé | h | lo |  |  | llo | abc

SELECT repeat('ab', 3), repeat('x', 0), repeat('x', -1), replace('hello world', 'o', '0'), replace('abc', '', 'z'), left('hello', 2), left('hello', -2), right('hello', 2), right('hello', -2)
----
ababab |  |  | hell0 w0rld | abc | he | hel | lo | llo

SELECT lpad('7', 3, '0'), rpad('ab', 5, 'xy'), lpad('hello', 2), rpad('hi', 4), lpad('hi', 5, ''), strpos('hello', 'll'), strpos('hello', 'z'), position('lo' IN 'hello'), length(repeat('é', 3)), lpad('é', 3, 'ü')
----
007 | abxyx | he | hi   | hi | 3 | 0 | 4 | 3 | üüé

SELECT repeat(NULL, 2), left(name, 3), repeat(name, 2), lpad(CAST(id AS TEXT), 4, '0') FROM items WHERE id = 1
----
NULL | app | appleapple | 0001

-- The function registry: NULL arguments, arity and unknown names as PostgreSQL answers them.
SELECT nullif(1, NULL), nullif(NULL, 1), nullif(2, 2), coalesce(NULL, 2, 3), greatest(1, NULL, 3), least(4, NULL, 2), concat('a', NULL, 1)
----
1 | NULL | NULL | 2 | 3 | 2 | a1

SELECT version(1)
----
error 42883

SELECT concat()
----
error 42883

SELECT lower('a', 'b')
----
error 42883

SELECT no_such_function(1)
----
error 42883

-- String and numeric functions, answered as PostgreSQL 15 answers them (checked side by side).
SELECT trim('  x  '), trim(leading 'x' from 'xxa'), trim('xax', 'x'), ltrim('xyab', 'yx'), rtrim('abyx', 'xy'), btrim('  ab  ')
----
x | a | a | ab | ab | ab

SELECT initcap('hello wORLD-foo bar_baz'), reverse('abc'), reverse(NULL), translate('12345', '143', 'ax')
----
Hello World-Foo Bar_Baz | cba | NULL | a2x5

SELECT split_part('a,b,c', ',', 2), split_part('a,b,c', ',', 4), split_part('a,b,c', ',', -1), split_part('abc', '', 1)
----
b |  | c | abc

SELECT starts_with('alphabet', 'alph'), starts_with('alphabet', 'b'), ascii('A'), ascii(''), chr(65), chr(233), octet_length('héllo'), char_length('héllo')
----
t | f | 65 | 0 | A | é | 6 | 5

SELECT split_part('a,b', ',', 0)
----
error 22023

SELECT chr(0)
----
error 54000

SELECT sign(-5), sign(0), sign(2.5), div(7, 2), div(-7, 2), gcd(-12, 18), lcm(4, 6), lcm(0, 5)
----
-1 | 0 | 1 | 3 | -3 | 6 | 12 | 0

SELECT round(2.345, 2), round(2.5), trunc(2.789, 1), trunc(-2.7), floor(-2.5), ceil(2.1)
----
2.35 | 3 | 2.7 | -2 | -3 | 3

SELECT sqrt(16), power(2, 10), exp(0), ln(1), pi(), log(100)
----
4 | 1024 | 1 | 0 | 3.141592653589793 | 2

SELECT sqrt(-1)
----
error 2201F

SELECT ln(0)
----
error 2201E

SELECT power(0, -1)
----
error 2201F

SELECT div(1, 0)
----
error 22012

-- IS [NOT] DISTINCT FROM treats NULL as a value; ^ is exponentiation (PostgreSQL 15's answers).
SELECT NULL IS DISTINCT FROM NULL, 1 IS DISTINCT FROM 2, 1 IS NOT DISTINCT FROM 1.0, NULL IS NOT DISTINCT FROM 1, 2 ^ 10, (-8) ^ 2
----
f | t | t | f | 1024 | 64

SELECT 1 IS DISTINCT FROM 'x'
----
error 22P02

-- EXTRACT, date_part and date_trunc (PostgreSQL 15's answers, scales included).
SELECT extract(year from timestamp '2024-03-01 12:34:56.5'), extract(second from timestamp '2024-03-01 12:34:56.5'), extract(epoch from timestamp '2024-03-01 12:34:56.5'), extract(dow from timestamp '2024-03-01 12:34:56.5'), extract(doy from timestamp '2024-03-01 12:34:56.5'), extract(week from timestamp '2024-03-01 12:34:56.5'), extract(millisecond from timestamp '2024-03-01 12:34:56.5'), extract(epoch from date '2024-03-01')
----
2024 | 56.500000 | 1709296496.500000 | 5 | 61 | 9 | 56500.000 | 1709251200

SELECT extract(isodow from date '2024-03-03'), extract(week from date '2021-01-01'), extract(isoyear from date '2021-01-01'), extract(century from date '2001-01-01'), extract(epoch from timestamp '1969-12-31 23:59:59.5'), date_part('second', timestamp '2024-03-01 12:34:56.5')
----
7 | 53 | 2020 | 21 | -0.500000 | 56.5

SELECT date_trunc('week', timestamp '2024-03-15 12:34:56.5'), date_trunc('quarter', timestamp '2024-05-15 12:34:56.5'), date_trunc('year', timestamp '1969-07-20 20:17:40'), date_trunc('milliseconds', timestamp '2024-05-15 12:34:56.123456')
----
2024-03-11 00:00:00 | 2024-04-01 00:00:00 | 1969-01-01 00:00:00 | 2024-05-15 12:34:56.123

SELECT extract(hour from date '2024-03-01')
----
error 0A000

SELECT date_trunc('bogus', timestamp '2024-03-15')
----
error 22023

-- string_agg: NULLs left out, NULL for no value, DISTINCT (PostgreSQL 15's answers).
CREATE TABLE sa (id INT PRIMARY KEY, g INT, name TEXT)
----
ok CREATE TABLE

INSERT INTO sa VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 2, NULL), (5, 1, 'a'), (6, 3, NULL)
----
ok INSERT 0 6

SELECT g, string_agg(name, ',') FROM sa GROUP BY g ORDER BY g
----
1 | a,b,a
2 | c
3 | NULL

SELECT string_agg(DISTINCT name, '-'), count(*) FROM sa WHERE g = 1
----
a-b | 3

SELECT string_agg(name, ', ') FROM sa WHERE id > 100
----
NULL

SELECT string_agg(name) FROM sa
----
error 42883

DROP TABLE sa
----
ok DROP TABLE

-- Text a function would build past the limit is refused before it is built.
SELECT repeat('x', 100000000)
----
error 54000

SELECT repeat('abc', 9223372036854775807)
----
error 54000

SELECT lpad('x', 2000000000, 'ab')
----
error 54000

SELECT replace(repeat('a', 1000000), 'a', repeat('b', 100))
----
error 54000

SELECT repeat('x', 2, 3)
----
error 42883

SELECT NULL = NULL, NULL IS NULL, 1 < 2 AND NULL, 1 > 2 AND NULL, 1 < 2 OR NULL, NOT (1 IN (2, NULL))
----
NULL | t | NULL | f | t | NULL

SELECT CAST('2024-02-29' AS DATE), DATE '2024-03-01' - DATE '2024-02-28', CAST('2024-01-02 03:04:05' AS TIMESTAMP), CAST(3.7 AS INTEGER), CAST(TRUE AS INT), '12'::BIGINT + 1
----
2024-02-29 | 2 | 2024-01-02 03:04:05 | 4 | 1 | 13

SELECT 1 / 0
----
error 22012

SELECT CAST('x' AS CHAR(3)) || '|', CAST('abcdef' AS VARCHAR(3)), CAST('\x0102' AS BYTEA)
----
x| | abc | \x0102

TRUNCATE items
----
ok TRUNCATE TABLE

SELECT count(*) FROM items
----
0

DROP TABLE items
----
ok DROP TABLE

DROP TABLE items
----
error 42P01

DROP TABLE IF EXISTS items
----
ok DROP TABLE
