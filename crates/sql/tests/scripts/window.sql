-- Window functions (ranking, offsets, frame values, aggregates over ROWS / GROUPS / RANGE frames,
-- named windows, windows over grouped rows) and aggregates with FILTER; every result is
-- PostgreSQL 15's.

CREATE TABLE emp (id int PRIMARY KEY, dept text, salary int, hired date)
----
ok CREATE TABLE

INSERT INTO emp VALUES (1, 'eng', 100, '2020-01-01'), (2, 'eng', 80, '2021-03-01'), (3, 'ops', 90, '2019-05-01'), (4, 'ops', 90, '2022-01-01'), (5, 'eng', 100, '2018-07-01'), (6, NULL, 50, NULL)
----
ok INSERT 0 6

SELECT id, row_number() OVER (ORDER BY id) FROM emp ORDER BY id
----
1 | 1
2 | 2
3 | 3
4 | 4
5 | 5
6 | 6

SELECT id, dept, rank() OVER (PARTITION BY dept ORDER BY salary DESC), dense_rank() OVER (PARTITION BY dept ORDER BY salary DESC) FROM emp ORDER BY dept, id
----
1 | eng | 1 | 1
2 | eng | 3 | 2
5 | eng | 1 | 1
3 | ops | 1 | 1
4 | ops | 1 | 1
6 | NULL | 1 | 1

SELECT id, sum(salary) OVER (PARTITION BY dept) FROM emp ORDER BY id
----
1 | 280
2 | 280
3 | 180
4 | 180
5 | 280
6 | 50

SELECT id, sum(salary) OVER (ORDER BY salary), count(*) OVER (ORDER BY salary) FROM emp ORDER BY id
----
1 | 510 | 6
2 | 130 | 2
3 | 310 | 4
4 | 310 | 4
5 | 510 | 6
6 | 50 | 1

SELECT id, avg(salary) OVER (PARTITION BY dept ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM emp ORDER BY id
----
1 | 90.0000000000000000
2 | 93.3333333333333333
3 | 90.0000000000000000
4 | 90.0000000000000000
5 | 90.0000000000000000
6 | 50.0000000000000000

SELECT id, lag(salary) OVER (ORDER BY id), lead(salary, 2, -1) OVER (ORDER BY id) FROM emp ORDER BY id
----
1 | NULL | 90
2 | 100 | 90
3 | 80 | 100
4 | 90 | 50
5 | 90 | -1
6 | 100 | -1

SELECT id, first_value(id) OVER w, last_value(id) OVER w, nth_value(id, 2) OVER w FROM emp WINDOW w AS (PARTITION BY dept ORDER BY id) ORDER BY id
----
1 | 1 | 1 | NULL
2 | 1 | 2 | 2
3 | 3 | 3 | NULL
4 | 3 | 4 | 4
5 | 1 | 5 | 2
6 | 6 | 6 | NULL

SELECT id, last_value(id) OVER (ORDER BY salary ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM emp ORDER BY id
----
1 | 5
2 | 5
3 | 5
4 | 5
5 | 5
6 | 5

SELECT id, ntile(4) OVER (ORDER BY id), percent_rank() OVER (ORDER BY salary), cume_dist() OVER (ORDER BY salary) FROM emp ORDER BY id
----
1 | 1 | 0.8 | 1
2 | 1 | 0.2 | 0.3333333333333333
3 | 2 | 0.4 | 0.6666666666666666
4 | 2 | 0.4 | 0.6666666666666666
5 | 3 | 0.8 | 1
6 | 4 | 0 | 0.16666666666666666

SELECT dept, sum(salary), rank() OVER (ORDER BY sum(salary) DESC) FROM emp GROUP BY dept ORDER BY 3, 1
----
eng | 280 | 1
ops | 180 | 2
NULL | 50 | 3

SELECT dept, count(*), sum(count(*)) OVER () FROM emp GROUP BY dept ORDER BY dept
----
eng | 3 | 6
ops | 2 | 6
NULL | 1 | 6

SELECT id, salary - lag(salary) OVER (ORDER BY id) AS delta FROM emp ORDER BY delta NULLS FIRST, id
----
1 | NULL
6 | -50
2 | -20
4 | 0
3 | 10
5 | 10

SELECT id, row_number() OVER (ORDER BY salary DESC, id) AS r FROM emp ORDER BY r LIMIT 3
----
1 | 1
5 | 2
3 | 3

SELECT * FROM (SELECT id, dept, row_number() OVER (PARTITION BY dept ORDER BY salary DESC, id) AS r FROM emp) s WHERE r = 1 ORDER BY id
----
1 | eng | 1
3 | ops | 1
6 | NULL | 1

SELECT id, sum(salary) OVER (ORDER BY id ROWS 2 PRECEDING) FROM emp ORDER BY id
----
1 | 100
2 | 180
3 | 270
4 | 260
5 | 280
6 | 240

SELECT id, sum(salary) OVER (ORDER BY salary GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM emp ORDER BY id
----
1 | 380
2 | 130
3 | 260
4 | 260
5 | 380
6 | 50

SELECT id, count(*) FILTER (WHERE salary > 85) OVER (PARTITION BY dept) FROM emp ORDER BY id
----
1 | 2
2 | 2
3 | 2
4 | 2
5 | 2
6 | 0

SELECT count(*) FILTER (WHERE salary > 85), sum(salary) FILTER (WHERE dept = 'eng'), count(*) FROM emp
----
4 | 280 | 6

SELECT dept, count(*) FILTER (WHERE hired > '2020-01-01') FROM emp GROUP BY dept ORDER BY dept
----
eng | 1
ops | 1
NULL | 0

SELECT id FROM emp WHERE row_number() OVER () > 1
----
error 42P20

SELECT lower('A') OVER ()
----
error 42809

SELECT row_number(1) OVER () FROM emp
----
error 42883

SELECT id, string_agg(id::text, ',') OVER (PARTITION BY dept ORDER BY id) FROM emp ORDER BY id
----
1 | 1
2 | 1,2
3 | 3
4 | 3,4
5 | 1,2,5
6 | 6

SELECT id, max(salary) OVER (), min(salary) OVER (PARTITION BY dept ORDER BY id DESC) FROM emp ORDER BY id
----
1 | 100 | 80
2 | 100 | 80
3 | 100 | 90
4 | 100 | 90
5 | 100 | 100
6 | 100 | 50

SELECT DISTINCT dept, max(salary) OVER (PARTITION BY dept) FROM emp ORDER BY dept
----
eng | 100
ops | 90
NULL | 50

SELECT id, ntile(2) OVER (PARTITION BY dept ORDER BY id) FROM emp ORDER BY id
----
1 | 1
2 | 1
3 | 1
4 | 2
5 | 2
6 | 1

SELECT id, sum(salary) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING) FROM emp ORDER BY id
----
1 | 270
2 | 260
3 | 280
4 | 240
5 | 150
6 | 50

SELECT id, sum(salary) OVER (ORDER BY id ROWS BETWEEN 9223372036854775807 FOLLOWING AND 1 FOLLOWING) FROM emp ORDER BY id
----
1 | NULL
2 | NULL
3 | NULL
4 | NULL
5 | NULL
6 | NULL

SELECT id, sum(salary) OVER (ORDER BY salary GROUPS BETWEEN 9223372036854775807 FOLLOWING AND UNBOUNDED FOLLOWING) FROM emp ORDER BY id
----
1 | NULL
2 | NULL
3 | NULL
4 | NULL
5 | NULL
6 | NULL

SELECT id, sum(salary) OVER (ORDER BY id ROWS BETWEEN 9223372036854775807 PRECEDING AND 9223372036854775807 FOLLOWING) FROM emp ORDER BY id
----
1 | 510
2 | 510
3 | 510
4 | 510
5 | 510
6 | 510

SELECT id, lag(id, -9223372036854775807) OVER (ORDER BY id) FROM emp ORDER BY id
----
error 42883

SELECT id, sum(salary) OVER (ORDER BY id ROWS -1 PRECEDING) FROM emp
----
error 22013
