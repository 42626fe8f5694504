-- json and jsonb: input and output, operators, functions, aggregates, set-returning functions in FROM and in a select list, storage, with the results of PostgreSQL 15

SELECT '{"bb":1,"a":[1,2.0],"a":3}'::jsonb, '{"b": [1,  2], "a": 1}'::json, '  [1, "x", null, true] '::jsonb
----
{"a": 3, "bb": 1} | {"b": [1,  2], "a": 1} | [1, "x", null, true]

SELECT '1e2'::jsonb, '-0'::jsonb, '1.50'::jsonb, '1.5e-3'::jsonb, '9223372036854775808'::jsonb, '"a\u0041\n"'::jsonb
----
100 | 0 | 1.50 | 0.0015 | 9223372036854775808 | "aA\n"

SELECT '{"a":1,}'::jsonb
----
error 22P02

SELECT '01'::jsonb
----
error 22P02

SELECT '"\u0000"'::jsonb
----
error 22P05

SELECT '{"a":1}'::json::jsonb, '{"a": 1, "a": 2}'::json, '[1,2]'::jsonb::json, '{"x":1}'::jsonb::text
----
{"a": 1} | {"a": 1, "a": 2} | [1, 2] | {"x": 1}

SELECT '{"a":{"b":[10,20]}}'::jsonb -> 'a', '{"a":{"b":[10,20]}}'::jsonb -> 'a' -> 'b' -> 1, '[1,2,3]'::jsonb -> -1, '[1,2,3]'::jsonb -> 5, '{"a":1}'::jsonb -> 0
----
{"b": [10, 20]} | 20 | 3 | NULL | NULL

SELECT '{"a":"x","n":null}'::jsonb ->> 'a', '{"a":"x","n":null}'::jsonb ->> 'n', '{"a":[1]}'::jsonb ->> 'a', '[true]'::jsonb ->> 0
----
x | NULL | [1] | true

SELECT '{"a": [1,  2], "b": "s"}'::json -> 'a', '{"a": [1,  2], "b": "s"}'::json ->> 'b', '{"a":1,"a":2}'::json -> 'a', '[1, {"c" : 3}]'::json -> 1
----
[1,  2] | s | 2 | {"c" : 3}

SELECT '{"a":{"b":[1,2]}}'::jsonb #> '{a,b,1}', '{"a":{"b":[1,2]}}'::jsonb #>> '{a,b}', '{"a":{"b":[1,2]}}'::jsonb #> '{a,x}', '{"a":1}'::jsonb #> '{}'
----
2 | [1, 2] | NULL | {"a": 1}

SELECT jsonb_extract_path('{"a":{"b":2}}', 'a', 'b'), json_extract_path_text('{"a":{"b":"t"}}', 'a', 'b'), jsonb_extract_path_text('{"a":1}', 'z')
----
2 | t | NULL

SELECT '{"a":1,"b":{"c":2}}'::jsonb @> '{"b":{}}', '{"a":1}'::jsonb @> '{"a":2}', '[1,2,[3]]'::jsonb @> '[[3]]', '[1,2]'::jsonb @> '1', '{"a":1}'::jsonb <@ '{"a":1,"b":2}'
----
t | f | t | t | t

SELECT '{"a":1}'::jsonb ? 'a', '["x","y"]'::jsonb ? 'y', '"s"'::jsonb ? 's', '{"a":1,"b":2}'::jsonb ?| ARRAY['z','b'], '{"a":1,"b":2}'::jsonb ?& ARRAY['a','z']
----
t | t | t | t | f

SELECT '{"a":1}'::jsonb || '{"b":2,"a":3}', '[1,2]'::jsonb || '[3]', '[1]'::jsonb || '2', '1'::jsonb || '2', '{"a":1}'::jsonb || '[2]'
----
{"a": 3, "b": 2} | [1, 2, 3] | [1, 2] | [1, 2] | [{"a": 1}, 2]

SELECT '{"a":1,"b":2}'::jsonb - 'a', '["a","b","a"]'::jsonb - 'a', '[1,2,3]'::jsonb - 1, '[1,2,3]'::jsonb - -1, '{"a":1,"b":2,"c":3}'::jsonb - ARRAY['a','c']
----
{"b": 2} | ["b"] | [1, 3] | [1, 2] | {"b": 2}

SELECT '{"a":1}'::jsonb - 0
----
error 22023

SELECT '{"a":{"b":1,"c":2}}'::jsonb #- '{a,b}', '[1,[2,3]]'::jsonb #- '{1,0}', '[1,2]'::jsonb #- '{x}'
----
error 22P02

SELECT jsonb_set('{"a":[1,2]}', '{a,0}', '5'), jsonb_set('{"a":1}', '{b}', '[true]'), jsonb_set('{"a":1}', '{b}', '2', false), jsonb_set('[1,2]', '{9}', '3'), jsonb_set('[1,2]', '{-9}', '0')
----
{"a": [5, 2]} | {"a": 1, "b": [true]} | {"a": 1} | [1, 2, 3] | [0, 1, 2]

SELECT jsonb_set('1', '{a}', '2')
----
error 22023

SELECT jsonb_set('[1]', '{x}', '2')
----
error 22P02

SELECT jsonb_insert('[1,3]', '{1}', '2'), jsonb_insert('[1,3]', '{1}', '2', true), jsonb_insert('{"a":1}', '{b}', '2')
----
[1, 2, 3] | [1, 3, 2] | {"a": 1, "b": 2}

SELECT jsonb_insert('{"a":1}', '{a}', '2')
----
error 22023

SELECT jsonb_typeof('{}'), jsonb_typeof('[]'), jsonb_typeof('1.5'), jsonb_typeof('"s"'), jsonb_typeof('null'), json_typeof(' true'), json_typeof('{"a":1}')
----
object | array | number | string | null | boolean | object

SELECT jsonb_array_length('[1,[2,3],4]'), json_array_length('[]')
----
3 | 0

SELECT jsonb_array_length('{}')
----
error 22023

SELECT json_array_length('5')
----
error 22023

SELECT jsonb_strip_nulls('{"a":null,"b":{"c":null,"d":1},"e":[null]}'), json_strip_nulls('{"a": 1, "b": null, "c": [1, null]}')
----
{"b": {"d": 1}, "e": [null]} | {"a":1,"c":[1,null]}

SELECT jsonb_pretty('{"a":[1,{"b":2}],"c":{}}')
----
{
    "a": [
        1,
        {
            "b": 2
        }
    ],
    "c": {
    }
}

SELECT to_jsonb(1), to_jsonb('a"b'::text), to_jsonb(1.50), to_jsonb(true), to_jsonb(ARRAY[1,NULL,3]), to_jsonb(date '2014-05-28'), to_jsonb(timestamp '2014-05-28 12:22:35.614298'), to_json('x'::text), to_json(ARRAY['a','b']), to_jsonb('{"a":1}'::json)
----
1 | "a\"b" | 1.50 | true | [1, null, 3] | "2014-05-28" | "2014-05-28T12:22:35.614298" | "x" | ["a","b"] | {"a": 1}

SELECT to_jsonb(NULL::int) IS NULL, to_json('NaN'::float8), to_jsonb('Infinity'::float8), to_jsonb(2.5::float8)
----
t | "NaN" | "Infinity" | 2.5

SELECT jsonb_build_object('a', 1, 'b', ARRAY[1,2], 'c', NULL, 'd', '{"x":1}'::jsonb), json_build_object('a', 1, 'b', 'x'), jsonb_build_object(), json_build_object(1, 2)
----
{"a": 1, "b": [1, 2], "c": null, "d": {"x": 1}} | {"a" : 1, "b" : "x"} | {} | {"1" : 2}

SELECT jsonb_build_object('a')
----
error 22023

SELECT jsonb_build_object(NULL, 1)
----
error 22023

SELECT jsonb_build_object(ARRAY[1], 1)
----
error 22023

SELECT jsonb_build_array(1, 'x', NULL, 2.5, '{"a":1}'::jsonb), json_build_array(1, 'x', NULL), jsonb_build_array()
----
[1, "x", null, 2.5, {"a": 1}] | [1, "x", null] | []

SELECT json_object('{a,1,b,2}'), jsonb_object('{a,1,b,NULL}'), jsonb_object('{a,b}', '{1,2}'), array_to_json(ARRAY[1,2,3]), array_to_json(ARRAY['{"a": 1}'::jsonb])
----
{"a" : "1", "b" : "2"} | {"a": "1", "b": null} | {"a": "1", "b": "2"} | [1,2,3] | [{"a": 1}]

SELECT jsonb_object('{a,b,c}')
----
error 2202E

SELECT ('{"a":5}'::jsonb -> 'a')::int + 1, ('{"a":2.5}'::jsonb -> 'a')::numeric, ('{"a":true}'::jsonb -> 'a')::bool, ('{"a":1e2}'::jsonb -> 'a')::float8, ('{"a":2.5}'::jsonb -> 'a')::int
----
6 | 2.5 | t | 100 | 3

SELECT ('{"a":"x"}'::jsonb -> 'a')::int
----
error 22023

SELECT '{"a":1}'::json::int
----
error 42846

SELECT '{"a":1}'::json = '{"a":1}'::json
----
error 42883

SELECT '{"a":1, "b":2}'::jsonb = '{"b":2, "a":1.0}'::jsonb, '[1,2]'::jsonb < '[1,3]'::jsonb, '{}'::jsonb > '[]'::jsonb, 'null'::jsonb < '"a"'::jsonb, '1'::jsonb < 'true'::jsonb
----
t | t | t | t | t

SELECT ('{"a":{"b":[7,8]}}'::jsonb)['a']['b'][1], ('[1,2]'::jsonb)[0], ('{"a":1}'::jsonb)['z']
----
8 | 1 | NULL

SELECT * FROM jsonb_each('{"b":[2],"a":1}')
----
a | 1
b | [2]

SELECT key, value FROM json_each('{"a": [1,  2], "b": null}')
----
a | [1,  2]
b | null

SELECT * FROM jsonb_each_text('{"a":"x","b":1,"c":null}')
----
a | x
b | 1
c | NULL

SELECT value FROM jsonb_array_elements('[1,"a",null,{"b":2}]')
----
1
"a"
null
{"b": 2}

SELECT * FROM json_array_elements_text('["x", 1, null]')
----
x
1
NULL

SELECT * FROM jsonb_object_keys('{"x":1,"yy":2,"z":3}')
----
x
z
yy

SELECT * FROM jsonb_each('[1]')
----
error 22023

SELECT * FROM jsonb_array_elements('{"a":1}')
----
error 22023

SELECT jsonb_array_elements('[1,[2]]'), 'x' AS c
----
1 | x
[2] | x

SELECT jsonb_object_keys('{"b":1,"a":2}') AS k ORDER BY k DESC
----
b
a

SELECT json_array_elements_text('["a","b"]'), jsonb_array_elements('[10,20,30]')
----
a | 10
b | 20
NULL | 30

SELECT jsonb_object_keys('[1]')
----
error 22023

CREATE TABLE docs (id int PRIMARY KEY, body jsonb, raw json)
----
ok CREATE TABLE

INSERT INTO docs VALUES (1, '{"name":"a","tags":["x","y"],"n":1.50}', '{"k": [1, 2]}'), (2, '{"name":"b","n":2,"tags":[]}', '[1,2]'), (3, NULL, NULL), (4, '{"name":"a","n":3}', '"s"')
----
ok INSERT 0 4

INSERT INTO docs VALUES (5, '{bad', NULL)
----
error 22P02

SELECT id, body, raw FROM docs ORDER BY id
----
1 | {"n": 1.50, "name": "a", "tags": ["x", "y"]} | {"k": [1, 2]}
2 | {"n": 2, "name": "b", "tags": []} | [1,2]
3 | NULL | NULL
4 | {"n": 3, "name": "a"} | "s"

SELECT id, body ->> 'name', body -> 'tags' -> 0, raw -> 'k' FROM docs ORDER BY id
----
1 | a | "x" | [1, 2]
2 | b | NULL | NULL
3 | NULL | NULL | NULL
4 | a | NULL | NULL

SELECT id FROM docs WHERE body @> '{"name":"a"}' ORDER BY id
----
1
4

SELECT id FROM docs WHERE body ? 'tags' ORDER BY id
----
1
2

SELECT id FROM docs WHERE (body ->> 'n')::numeric > 1.5 ORDER BY id
----
2
4

SELECT body ->> 'name' AS name, count(*), sum((body ->> 'n')::numeric) FROM docs GROUP BY 1 ORDER BY 1
----
a | 2 | 4.50
b | 1 | 2
NULL | 1 | NULL

SELECT DISTINCT body FROM docs ORDER BY body
----
{"n": 3, "name": "a"}
{"n": 1.50, "name": "a", "tags": ["x", "y"]}
{"n": 2, "name": "b", "tags": []}
NULL

SELECT body -> 'n' FROM docs ORDER BY body -> 'n' DESC NULLS LAST
----
3
2
1.50
NULL

SELECT json_agg(id ORDER BY id), jsonb_agg(body -> 'name' ORDER BY id), jsonb_agg(DISTINCT body -> 'name') FROM docs
----
[1, 2, 3, 4] | ["a", "b", null, "a"] | ["a", "b", null]

SELECT json_object_agg(id, body -> 'n' ORDER BY id), jsonb_object_agg(id::text, id * 2) FROM docs WHERE body IS NOT NULL
----
{ "1" : 1.50, "2" : 2, "4" : 3 } | {"1": 2, "2": 4, "4": 8}

SELECT jsonb_object_agg(body ->> 'name', id) FROM docs
----
error 22023

SELECT json_agg(x) FROM docs WHERE id > 10
----
error 42703

UPDATE docs SET body = jsonb_set(body, '{n}', '10') WHERE id = 2 RETURNING body
----
{"n": 10, "name": "b", "tags": []}

UPDATE docs SET body = body || '{"extra": true}' WHERE body ->> 'name' = 'a'
----
ok UPDATE 2

SELECT id, body FROM docs ORDER BY id
----
1 | {"n": 1.50, "name": "a", "tags": ["x", "y"], "extra": true}
2 | {"n": 10, "name": "b", "tags": []}
3 | NULL
4 | {"n": 3, "name": "a", "extra": true}

SELECT id, jsonb_array_elements_text(body -> 'tags') AS tag FROM docs ORDER BY id, tag
----
1 | x
1 | y

SELECT count(*) FROM docs, jsonb_array_elements('[1,2,3]') e
----
12

CREATE INDEX docs_raw ON docs (raw)
----
error 42704
