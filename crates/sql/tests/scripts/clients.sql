-- The statements pgbench (init and the TPC-B-like script) and sysbench's oltp_* scripts send.
drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers
----
ok DROP TABLE

create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))
----
ok CREATE TABLE

create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)
----
ok CREATE TABLE

create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)
----
ok CREATE TABLE

create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)
----
ok CREATE TABLE

truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers
----
ok TRUNCATE TABLE

insert into pgbench_branches(bid,bbalance) values(1,0)
----
ok INSERT 0 1

insert into pgbench_tellers(tid,bid,tbalance) values (1,1,0), (2,1,0)
----
ok INSERT 0 2

insert into pgbench_accounts(aid,bid,abalance,filler) values (1,1,0,''), (2,1,0,'')
----
ok INSERT 0 2

vacuum analyze pgbench_branches
----
ok VACUUM

alter table pgbench_branches add primary key (bid)
----
ok ALTER TABLE

alter table pgbench_tellers add primary key (tid)
----
ok ALTER TABLE

alter table pgbench_accounts add primary key (aid)
----
ok ALTER TABLE

BEGIN
----
ok BEGIN

UPDATE pgbench_accounts SET abalance = abalance + -5 WHERE aid = 2
----
ok UPDATE 1

SELECT abalance FROM pgbench_accounts WHERE aid = 2
----
-5

UPDATE pgbench_tellers SET tbalance = tbalance + -5 WHERE tid = 1
----
ok UPDATE 1

UPDATE pgbench_branches SET bbalance = bbalance + -5 WHERE bid = 1
----
ok UPDATE 1

INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 2, -5, CURRENT_TIMESTAMP)
----
ok INSERT 0 1

END
----
ok COMMIT

select count(*) from pgbench_branches
----
1

CREATE TABLE sbtest1(
  id SERIAL,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
)
----
ok CREATE TABLE

INSERT INTO sbtest1 (k, c, pad) VALUES(5, '68487932199-96439406143', '22195207048-70116052123'),(3, '13241531885-45658403807', '22195207048-70116052124'),(5, '51988341052-77467592453', '76135063036-74138924185')
----
ok INSERT 0 3

CREATE INDEX k_1 ON sbtest1(k)
----
ok CREATE INDEX

SELECT c FROM sbtest1 WHERE id=2
----
13241531885-45658403807

SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 2
----
68487932199-96439406143
13241531885-45658403807

SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 3
----
13

SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c
----
13241531885-45658403807
51988341052-77467592453
68487932199-96439406143

SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c
----
13241531885-45658403807
51988341052-77467592453
68487932199-96439406143

UPDATE sbtest1 SET k=k+1 WHERE id=3
----
ok UPDATE 1

UPDATE sbtest1 SET c='00000000000-00000000000' WHERE id=1
----
ok UPDATE 1

DELETE FROM sbtest1 WHERE id=2
----
ok DELETE 1

INSERT INTO sbtest1 (id, k, c, pad) VALUES (2, 4, '11111111111-11111111111', '22222222222-22222222222')
----
ok INSERT 0 1

SELECT id, k FROM sbtest1 WHERE k = 6
----
3 | 6
