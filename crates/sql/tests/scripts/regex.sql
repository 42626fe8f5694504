-- Regular expressions: the ~, ~*, !~ and !~* operators, regexp_like, regexp_count,
-- regexp_substr and regexp_replace with their flags; every result is PostgreSQL 15's.

CREATE TABLE words (id int PRIMARY KEY, w text)
----
ok CREATE TABLE

INSERT INTO words VALUES (1, 'apple'), (2, 'Banana'), (3, 'cherry pie'), (4, 'date'), (5, NULL), (6, 'line one
line two')
----
ok INSERT 0 6

SELECT id FROM words WHERE w ~ '^[a-c]' ORDER BY id
----
1
3

SELECT id FROM words WHERE w ~* '^b' ORDER BY id
----
2

SELECT id FROM words WHERE w !~ 'e' ORDER BY id
----
2

SELECT id FROM words WHERE w !~* 'A' ORDER BY id
----
3
6

SELECT id, w ~ 'one.line' AS dotall, w ~ 'one$' AS anchored FROM words WHERE id = 6
----
6 | t | f

SELECT regexp_like('Hello', 'h'), regexp_like('Hello', 'h', 'i'), regexp_like(NULL, 'x')
----
f | t | NULL

SELECT regexp_replace('Thomas', '.[mN]a.', 'M'), regexp_replace('foobarbaz', 'b(..)', 'X\1Y', 'g'), regexp_replace('abc', 'b', '[\&]'), regexp_replace('a.b.c', '\.', '-', 'g')
----
ThM | fooXarYXazY | a[b]c | a-b-c

SELECT regexp_count('ABCABCAXYaxy', 'A.'), regexp_count('ABCABCAXYaxy', 'A.', 1, 'i'), regexp_count('ABCABC', 'B', 3)
----
3 | 4 | 1

SELECT regexp_substr('1234567890', '(123)(4(56)(78))'), regexp_substr('abcabcabc', 'a.c', 2), regexp_substr('abcabcabc', 'a.c', 1, 3), regexp_substr('abc', 'x')
----
12345678 | abc | abc | NULL

SELECT 'x' ~ '('
----
error 2201B

SELECT regexp_replace('abc', 'b', 'x', 'q')
----
axc

SELECT count(*) FROM words WHERE w ~ '[[:digit:]]'
----
0

SELECT id, regexp_replace(w, '[aeiou]', '', 'g') FROM words ORDER BY id
----
1 | ppl
2 | Bnn
3 | chrry p
4 | dt
5 | NULL
6 | ln n
ln tw
