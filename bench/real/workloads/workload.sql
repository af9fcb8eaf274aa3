-- SQL workload for Debian's sqlite3 (bench/real, bench/sqlite): tables, an index, joins,
-- aggregates, a recursive CTE, string functions. Deterministic (no randomblob): the oracle
-- must run what the crashed run ran.
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<3000)
INSERT INTO t SELECT i, printf('row-%05d-%s', i, hex(i * 7919 % 65536)), i*1.5 FROM n;
CREATE INDEX tb ON t(b);
CREATE TABLE u AS SELECT a % 97 AS k, count(*) AS n, sum(c) AS s FROM t GROUP BY a % 97;
SELECT k, n, s FROM u ORDER BY s DESC LIMIT 5;
SELECT count(*) FROM t JOIN u ON t.a % 97 = u.k WHERE t.b LIKE 'row-0%';
UPDATE t SET b = upper(b) WHERE a % 3 = 0;
DELETE FROM t WHERE a % 5 = 0;
SELECT group_concat(substr(b, 5, 5), ',') FROM (SELECT b FROM t ORDER BY b LIMIT 50);
SELECT max(length(b)), min(c), avg(c) FROM t;
