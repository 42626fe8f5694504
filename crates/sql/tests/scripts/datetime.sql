-- Dates, times, timestamps with and without time zones, intervals and uuids: input forms, output,
-- arithmetic across daylight-saving changes, AT TIME ZONE, the date/time functions; every result
-- is PostgreSQL 15's.

SET TIME ZONE 'UTC'
----
ok SET

CREATE TABLE events (id int PRIMARY KEY, at timestamptz, local timestamp, day date, t time, span interval, ref uuid)
----
ok CREATE TABLE

INSERT INTO events VALUES (1, '2024-03-10 01:30:00-05', '2024-03-10 01:30:00', '2024-03-10', '01:30', '1 day 02:00:00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), (2, '2024-11-03 05:30:00Z', '2024-11-03 01:30', '2024-11-03', '23:59:59.999999', '-1 mons +3 days -04:00:00', '{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12}'), (3, NULL, NULL, NULL, NULL, NULL, NULL)
----
ok INSERT 0 3

SELECT id, at, local, day, t, span, ref FROM events ORDER BY id
----
1 | 2024-03-10 06:30:00+00 | 2024-03-10 01:30:00 | 2024-03-10 | 01:30:00 | 1 day 02:00:00 | a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11
2 | 2024-11-03 05:30:00+00 | 2024-11-03 01:30:00 | 2024-11-03 | 23:59:59.999999 | -1 mons +3 days -04:00:00 | a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12
3 | NULL | NULL | NULL | NULL | NULL | NULL

SELECT id, at + span, local + span, day + span, t + span FROM events ORDER BY id
----
1 | 2024-03-11 08:30:00+00 | 2024-03-11 03:30:00 | 2024-03-11 02:00:00 | 03:30:00
2 | 2024-10-06 01:30:00+00 | 2024-10-05 21:30:00 | 2024-10-05 20:00:00 | 19:59:59.999999
3 | NULL | NULL | NULL | NULL

SELECT id, at - '2024-01-01 00:00:00+00'::timestamptz, local - timestamp '2024-01-01', day - date '2024-01-01' FROM events ORDER BY id
----
1 | 69 days 06:30:00 | 69 days 01:30:00 | 69
2 | 307 days 05:30:00 | 307 days 01:30:00 | 307
3 | NULL | NULL | NULL

SET TIME ZONE 'America/New_York'
----
ok SET

SELECT id, at, at::date, at::time, at::timestamp FROM events ORDER BY id
----
1 | 2024-03-10 01:30:00-05 | 2024-03-10 | 01:30:00 | 2024-03-10 01:30:00
2 | 2024-11-03 01:30:00-04 | 2024-11-03 | 01:30:00 | 2024-11-03 01:30:00
3 | NULL | NULL | NULL | NULL

SELECT timestamptz '2024-03-10 02:30:00', timestamptz '2024-11-03 01:30:00', timestamptz '2024-03-09 12:00' + interval '1 day', timestamptz '2024-03-09 12:00' + interval '24 hours'
----
2024-03-10 03:30:00-04 | 2024-11-03 01:30:00-05 | 2024-03-10 12:00:00-04 | 2024-03-10 13:00:00-04

SELECT local AT TIME ZONE 'UTC', at AT TIME ZONE 'Asia/Kolkata', at AT TIME ZONE 'Europe/Paris' FROM events WHERE id = 1
----
2024-03-09 20:30:00-05 | 2024-03-10 12:00:00 | 2024-03-10 07:30:00

SELECT date_trunc('day', at), date_trunc('month', local), date_trunc('hour', span), extract(hour from at), extract(epoch from at), extract(timezone_hour from at) FROM events WHERE id = 1
----
2024-03-10 00:00:00-05 | 2024-03-01 00:00:00 | 1 day 02:00:00 | 1 | 1710052200.000000 | -5

SET TIME ZONE 'UTC'
----
ok SET

SELECT interval '1 mon' = interval '30 days', interval '-1 day' < interval '1 hour', interval 'P1Y2M3DT4H5M6S', interval '@ 1 minute ago', interval '3' day, interval '1-2', interval '1.5 days', interval '1.5 months'
----
t | t | 1 year 2 mons 3 days 04:05:06 | -00:01:00 | 3 days | 1 year 2 mons | 1 day 12:00:00 | 1 mon 15 days

SELECT interval '1 hour' * 1.5, interval '1 day' / 3, interval '1 mon' * 0.3, - interval '1 day 2 hours', justify_hours(interval '50 hours'), justify_days(interval '65 days'), justify_interval(interval '1 mon -1 hour')
----
01:30:00 | 08:00:00 | 9 days | -1 days -02:00:00 | 2 days 02:00:00 | 2 mons 5 days | 29 days 23:00:00

SELECT age(timestamp '2001-04-10', timestamp '1957-06-13'), age(timestamp '1957-06-13', timestamp '2001-04-10'), make_interval(1, 2, 3, 4, 5, 6, 7.5), make_date(2024, 2, 29), make_time(10, 30, 15.5), make_timestamp(2024, 1, 2, 3, 4, 5.5), to_timestamp(1700000000)
----
43 years 9 mons 27 days | -43 years -9 mons -27 days | 1 year 2 mons 25 days 05:06:07.5 | 2024-02-29 | 10:30:15.5 | 2024-01-02 03:04:05.5 | 2023-11-14 22:13:20+00

SELECT 'January 8, 1999'::date, '1/8/1999'::date, '1999-Jan-08'::date, '08-Jan-1999'::date, '19990108'::date, '0044-03-15 BC'::date, 'infinity'::date, '-infinity'::timestamp
----
1999-01-08 | 1999-01-08 | 1999-01-08 | 1999-01-08 | 1999-01-08 | 0044-03-15 BC | infinity | -infinity

SELECT '2024-02-30'::date
----
error 22008

SELECT 'not a date'::timestamptz
----
error 22007

SELECT '25:00'::time
----
error 22008

SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1'::uuid
----
error 22P02

SELECT date_bin('15 minutes', timestamp '2024-01-01 10:37:00', timestamp '2024-01-01 00:00'), isfinite(date 'infinity'), isfinite(timestamp '2024-01-01')
----
2024-01-01 10:30:00 | f | t

SELECT extract(epoch from interval '1 year 1 day'), extract(day from interval '40 days'), extract(minute from time '10:42:13'), date_part('year', date '2024-05-01')
----
31644000.000000 | 40 | 42 | 2024

SELECT count(*), min(at), max(span), max(local), min(day), max(t) FROM events
----
3 | 2024-03-10 06:30:00+00 | 1 day 02:00:00 | 2024-11-03 01:30:00 | 2024-03-10 | 23:59:59.999999

SELECT id FROM events WHERE span > interval '1 day' ORDER BY id
----
1

SELECT id FROM events WHERE ref = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'
----
2

SELECT pg_typeof(now()), pg_typeof(localtimestamp), pg_typeof(current_date), pg_typeof(interval '1 day'), pg_typeof(gen_random_uuid())
----
timestamp with time zone | timestamp without time zone | date | interval | uuid

SELECT length(gen_random_uuid()::text), gen_random_uuid() <> gen_random_uuid()
----
36 | t
