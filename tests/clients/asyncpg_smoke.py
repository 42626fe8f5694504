"""asyncpg against engram serve: binary parameters and results (integers, text, text[],
timestamptz), executemany, `= ANY($1::text[])`, and a nested transaction (a savepoint) around
a unique violation."""
import asyncio
import datetime
import os

import asyncpg


async def main():
    c = await asyncpg.connect(host=os.environ.get("PGHOST", "127.0.0.1"), port=int(os.environ["PGPORT"]),
                              user="postgres", database="engram")
    assert await c.fetchval("SELECT 1 + $1::int", 41) == 42
    await c.execute("DROP TABLE IF EXISTS apg")
    await c.execute("CREATE TABLE apg (id serial PRIMARY KEY, name text, tags text[], at timestamptz DEFAULT now())")
    await c.executemany("INSERT INTO apg (name, tags) VALUES ($1, $2)", [("a", ["x", "y"]), ("b", [])])
    rows = await c.fetch("SELECT id, name, tags, at FROM apg WHERE name = ANY($1::text[]) ORDER BY id", ["a", "b"])
    assert [(r["id"], r["name"], r["tags"]) for r in rows] == [(1, "a", ["x", "y"]), (2, "b", [])], rows
    assert all(isinstance(r["at"], datetime.datetime) and r["at"].tzinfo is not None for r in rows)
    async with c.transaction():
        await c.execute("UPDATE apg SET name = 'c' WHERE id = 1")
        try:
            async with c.transaction():
                await c.execute("INSERT INTO apg (id, name) VALUES (1, 'dup')")
            raise AssertionError("a duplicate key was accepted")
        except asyncpg.UniqueViolationError:
            pass
    assert await c.fetchval("SELECT name FROM apg WHERE id = 1") == "c"
    await c.execute("DROP TABLE apg")
    await c.close()
    print("asyncpg ok")


asyncio.run(main())
