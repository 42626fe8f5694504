"""asyncpg against engram serve: binary parameters and results (integers, text, text[],
timestamptz, jsonb and json in binary), executemany, `= ANY($1::text[])`, and a nested
transaction (a savepoint) around a unique violation."""
import asyncio
import datetime
import json
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
    # jsonb and json in binary, through codecs as an application registers them.
    for kind in ("json", "jsonb"):
        await c.set_type_codec(kind, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await c.execute("CREATE TABLE apg_doc (id int PRIMARY KEY, body jsonb, raw json)")
    await c.executemany("INSERT INTO apg_doc VALUES ($1, $2, $3)",
                        [(1, {"name": "a", "tags": ["x"]}, [1, None]), (2, {"name": "b", "n": 2.5}, {"k": "v"})])
    rows = await c.fetch("SELECT id, body, raw, body ->> 'name' AS name FROM apg_doc "
                         "WHERE body @> $1 ORDER BY id", {"name": "b"})
    assert [(r["id"], r["body"], r["raw"], r["name"]) for r in rows] == [(2, {"n": 2.5, "name": "b"}, {"k": "v"}, "b")], rows
    assert await c.fetchval("SELECT jsonb_agg(body -> 'name' ORDER BY id) FROM apg_doc") == ["a", "b"]
    await c.execute("DROP TABLE apg_doc")
    await c.close()
    print("asyncpg ok")


asyncio.run(main())
