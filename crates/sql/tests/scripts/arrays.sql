-- Arrays: literals, ANY/ALL, subscripts, array functions, array_agg, unnest, storage and keys, with the results of PostgreSQL 15

SELECT ARRAY[1,2,3], ARRAY['a','b c',NULL,'', 'x"y', 'back\slash', 'NULL'], '{1,2}'::int[], (ARRAY[10,20,30])[2]
----
{1,2,3} | {a,"b c",NULL,"","x\"y","back\\slash","NULL"} | {1,2} | 20

SELECT '{ a , "b c" , NULL, "NULL" }'::text[]
----
{a,"b c",NULL,"NULL"}

SELECT '{}'::int[], ARRAY[]::text[], cardinality('{}'::int[])
----
{} | {} | 0

SELECT '{1,2'::int[]
----
error 22P02

-- Engram's arrays have one dimension (PostgreSQL returns {{1,2},{3,4}}).
SELECT '{{1,2},{3,4}}'::int[]
----
error 0A000

SELECT '{1,x}'::int[]
----
error 22P02

SELECT 2 = ANY(ARRAY[1,2,3]), 5 = ANY('{1,2}'), 1 <> ALL(ARRAY[2,3]), NULL::int = ANY(ARRAY[1]), 1 = ANY(ARRAY[2,NULL]), 1 = ANY('{}'::int[]), 1 = ALL('{}'::int[])
----
t | f | t | NULL | NULL | f | t

SELECT 3 > ALL(ARRAY[1,2]), 3 > ANY(ARRAY[5,6]), 'b' = ANY(ARRAY['a','b'])
----
t | f | t

CREATE TABLE arr (id int PRIMARY KEY, tags text[], nums int[], big bigint[])
----
ok CREATE TABLE

INSERT INTO arr VALUES (1, '{a,b}', ARRAY[1,2], '{10000000000}'), (2, ARRAY['x'], '{}', NULL), (3, NULL, '{5,NULL}', '{1,2,3}')
----
ok INSERT 0 3

SELECT * FROM arr ORDER BY id
----
1 | {a,b} | {1,2} | {10000000000}
2 | {x} | {} | NULL
3 | NULL | {5,NULL} | {1,2,3}

SELECT id FROM arr WHERE 'a' = ANY(tags)
----
1

SELECT id FROM arr WHERE id = ANY(ARRAY[1,3]) ORDER BY id
----
1
3

SELECT id, tags[1], tags[2], tags[5], nums[0] FROM arr ORDER BY id
----
1 | a | b | NULL | NULL
2 | x | NULL | NULL | NULL
3 | NULL | NULL | NULL | NULL

SELECT array_agg(id ORDER BY id DESC) FROM arr
----
{3,2,1}

SELECT array_agg(tags[1] ORDER BY id) FROM arr
----
{a,x,NULL}

SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM arr
----
3,2,1

SELECT array_agg(id) FILTER (WHERE id > 1) FROM arr
----
{2,3}

SELECT array_agg(id) FROM arr WHERE id > 10
----
NULL

SELECT bool_and(id > 0), bool_or(id > 2), every(id > 1) FROM arr
----
t | t | f

SELECT ARRAY(SELECT id FROM arr ORDER BY id DESC)
----
{3,2,1}

SELECT pg_typeof(ARRAY[1.5]), pg_typeof(tags), pg_typeof(big) FROM arr LIMIT 1
----
numeric[] | text[] | bigint[]

SELECT array_length(nums, 1), cardinality(nums), array_upper(nums, 1), array_lower(nums, 1), array_ndims(nums), array_dims(nums) FROM arr ORDER BY id
----
2 | 2 | 2 | 1 | 1 | [1:2]
NULL | 0 | NULL | NULL | NULL | NULL
2 | 2 | 2 | 1 | 1 | [1:2]

SELECT array_position(ARRAY['a','b','c','b'], 'b'), array_position(ARRAY['a','b','c','b'], 'b', 3), array_positions(ARRAY[1,2,1], 1), array_position(ARRAY[1,NULL], NULL)
----
2 | 4 | {1,3} | 2

SELECT array_append(ARRAY[1,2], 3), array_prepend(0, ARRAY[1]), array_cat(ARRAY[1], ARRAY[2,3]), array_append(NULL, 1), array_remove(ARRAY[1,2,1], 1), array_replace(ARRAY[1,2,1], 1, 9)
----
{1,2,3} | {0,1} | {1,2,3} | {1} | {2} | {9,2,9}

SELECT ARRAY[1,2] || ARRAY[3], ARRAY[1] || 2, 0 || ARRAY[1], ARRAY['a'] || 'b'::text
----
{1,2,3} | {1,2} | {0,1} | {a,b}

SELECT array_to_string(ARRAY[1,NULL,3], ','), array_to_string(ARRAY[1,NULL,3], ',', '*'), string_to_array('a,b,,c', ','), string_to_array('a,b,,c', ',', ''), string_to_array('abc', NULL)
----
1,3 | 1,*,3 | {a,b,"",c} | {a,b,NULL,c} | {a,b,c}

SELECT ARRAY[1,2,3] @> ARRAY[2], ARRAY[1,2] <@ ARRAY[1,2,3], ARRAY[1,2] && ARRAY[3,4], ARRAY[1,2] && ARRAY[2]
----
t | t | f | t

SELECT ARRAY[1,2] = ARRAY[1,2], ARRAY[1,2] < ARRAY[1,3], ARRAY[1,2] < ARRAY[1,2,0], '{1,2}'::int[] = ARRAY[1,2]
----
t | t | t | t

SELECT u FROM unnest(ARRAY[3,1,2]) u ORDER BY u
----
1
2
3

SELECT * FROM unnest(ARRAY['x','y']) WITH ORDINALITY AS t(v, n)
----
x | 1
y | 2

SELECT * FROM unnest(ARRAY[1,2], ARRAY['a']) AS t(a, b)
----
1 | a
2 | NULL

SELECT id, unnest FROM arr, unnest(ARRAY[1,2]) ORDER BY id, unnest
----
1 | 1
1 | 2
2 | 1
2 | 2
3 | 1
3 | 2

UPDATE arr SET tags = array_append(tags, 'z') WHERE id = 1 RETURNING tags
----
{a,b,z}

SELECT tags FROM arr WHERE tags = '{a,b,z}'
----
{a,b,z}

SELECT id FROM arr WHERE tags @> '{z}'
----
1

SELECT ARRAY[1, 2.5], ARRAY[1::smallint, 2::bigint]
----
{1,2.5} | {1,2}

SELECT ARRAY['a', 1]
----
error 22P02

SELECT 1 = ANY(1)
----
error 42809

SELECT (ARRAY[1,2])['x']
----
error 22P02

SELECT ARRAY[now()::date] = ARRAY[now()::date]
----
t

SELECT ARRAY[true, false, NULL], ARRAY[1.5::float8, 2], ARRAY['2024-01-02'::date], ARRAY[interval '1 day']
----
{t,f,NULL} | {1.5,2} | {2024-01-02} | {"1 day"}

CREATE TABLE ua (k text[] PRIMARY KEY, v int)
----
ok CREATE TABLE

INSERT INTO ua VALUES ('{a,b}', 1), ('{a}', 2), ('{}', 3)
----
ok INSERT 0 3

INSERT INTO ua VALUES ('{a,b}', 4)
----
error 23505

SELECT v FROM ua WHERE k = '{a}'
----
2

SELECT count(*) FROM ua
----
3

SELECT array_agg(DISTINCT v ORDER BY v) FROM (VALUES (2), (1), (2)) AS t(v)
----
{1,2}
