"""psycopg 3 against engram serve: server-side parameters, types, transactions, errors."""
import decimal
import os

import psycopg

conninfo = f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} user=postgres dbname=engram"
with psycopg.connect(conninfo) as conn:
    conn.execute("CREATE TABLE py (id INT PRIMARY KEY, name TEXT, amount NUMERIC(10,2), ok BOOLEAN)")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO py VALUES (%s, %s, %s, %s)",
            [(i, f"n{i}", decimal.Decimal(i) / 4, i % 2 == 0) for i in range(20)],
        )
    conn.commit()
    rows = conn.execute("SELECT id, name, amount, ok FROM py WHERE id < %s ORDER BY id", (3,)).fetchall()
    assert rows == [(0, "n0", decimal.Decimal("0.00"), True), (1, "n1", decimal.Decimal("0.25"), False),
                    (2, "n2", decimal.Decimal("0.50"), True)], rows
    # Binary results too.
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT sum(amount), count(*) FROM py")
        assert cur.fetchone() == (decimal.Decimal("47.50"), 20)
    try:
        conn.execute("INSERT INTO py VALUES (1, 'dup', 0, true)")
        raise AssertionError("duplicate key accepted")
    except psycopg.errors.UniqueViolation:
        conn.rollback()
    with conn.transaction():
        conn.execute("UPDATE py SET name = 'changed' WHERE id = 5")
    assert conn.execute("SELECT name FROM py WHERE id = 5").fetchone() == ("changed",)
    conn.execute("DROP TABLE py")
    conn.commit()
print("psycopg ok")
