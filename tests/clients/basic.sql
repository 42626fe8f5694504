-- psql against engram serve: DDL, DML, transactions, errors, COPY through \copy's protocol.
CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(20) NOT NULL, balance NUMERIC(12,2) DEFAULT 0);
CREATE INDEX accounts_owner ON accounts (owner);
INSERT INTO accounts VALUES (1, 'ada', 100.50), (2, 'bob', 20), (3, 'cy', 0);
SELECT id, owner, balance FROM accounts ORDER BY id;
UPDATE accounts SET balance = balance - 10 WHERE owner = 'ada' RETURNING id, balance;
BEGIN;
UPDATE accounts SET balance = balance + 5 WHERE id = 2;
SELECT balance FROM accounts WHERE id = 2;
ROLLBACK;
SELECT balance FROM accounts WHERE id = 2;
BEGIN;
INSERT INTO accounts VALUES (1, 'dup', 0);
SELECT 1;
ROLLBACK;
INSERT INTO accounts (id, owner) VALUES (4, NULL);
SELECT count(*), sum(balance) FROM accounts;
\copy accounts FROM 'copy.tsv'
SELECT owner, balance FROM accounts WHERE id >= 10 ORDER BY id;
DELETE FROM accounts WHERE id >= 10;
SELECT count(*) FROM accounts;
SHOW transaction_isolation;
\dt
\di
\d accounts
\d nothing_here
SELEC 1;
ALTER TABLE accounts ADD COLUMN note TEXT DEFAULT 'none', ALTER COLUMN balance TYPE NUMERIC(14,2);
ALTER TABLE accounts DROP COLUMN owner;
ALTER TABLE accounts RENAME COLUMN note TO remark;
SELECT * FROM accounts ORDER BY id;
\d accounts
COMMENT ON TABLE accounts IS 'money held';
COMMENT ON COLUMN accounts.remark IS 'a note';
\dt+
\d+ accounts
DROP TABLE accounts;
