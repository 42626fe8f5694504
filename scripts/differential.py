#!/usr/bin/env python3
"""Differential runner: SQL files run statement by statement on PostgreSQL and on Engram.

Each statement is sent alone through libpq's simple query protocol (psycopg's `pq` layer, so
what reaches the servers is what psql sends) to a PostgreSQL and to an Engram server that
started empty. A statement matches when both succeed with the same command tag and the same
rows (compared as text, in order when the statement has an ORDER BY and as a multiset when it
has not), or when both fail with the same SQLSTATE class (its first two characters).

psql's meta-commands are handled as far as the files need: `\\set` and `\\getenv` define
variables that `:name` and `:'name'` expand, `COPY ... FROM 'file'` is sent as `COPY ... FROM
STDIN` with the file's data (both servers get the same), an inline `COPY ... FROM stdin` block
is sent up to its `\\.` line, and display commands (`\\d`, `\\pset`, `\\x`) are skipped, not
counted.

Usage (scripts/differential.sh starts PostgreSQL and builds Engram):
  differential.py --pg-admin CONNINFO --pg CONNINFO --engram BINARY [--setup FILE]
                  [--json OUT] [--show N] FILE...
Before each file PostgreSQL's database `regress` is made again (through the admin connection)
and a new in-memory Engram server is started, so every file starts from an empty database.
"""

import argparse
import json
import socket
import os
import re
import subprocess
import sys
import time

from psycopg import pq

# --- splitting a psql script into statements -------------------------------------------------


class Script:
    """The statements of a psql script, with psql's variables expanded."""

    def __init__(self, path, variables):
        self.path = path
        self.dir = os.path.dirname(path)
        self.variables = variables
        with open(path, encoding="utf-8", errors="replace") as f:
            self.text = f.read()

    def expand(self, text):
        """psql's `:name`, `:'name'` and `:"name"` for variables that are set."""

        def one(match):
            quote, name = match.group(1) or "", match.group(2)
            if name not in self.variables:
                return match.group(0)
            value = self.variables[name]
            if quote == "'":
                return "'" + value.replace("'", "''") + "'"
            if quote == '"':
                return '"' + value.replace('"', '""') + '"'
            return value

        # `:'name'` and `:"name"` look like quoted text to the lexer: expanded first.
        text = re.sub(r"(?<!:):(['\"])([A-Za-z_][A-Za-z0-9_]*)\1", one, text)
        out = []
        # Bare `:name` only outside quotes and comments.
        for kind, piece in lex(text):
            if kind == "code":
                piece = re.sub(r"(?<!:):([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])",
                               lambda m: self.variables.get(m.group(1), m.group(0)), piece)
            out.append(piece)
        return "".join(out)

    def meta(self, line):
        """Runs a meta-command line; returns (statement terminator?, extra)."""
        words = line.split()
        command = words[0]
        if command == "\\set" and len(words) >= 2:
            value = ""
            for token in re.findall(r"'(?:[^']|'')*'|\S+", " ".join(words[2:])):
                if token.startswith("'"):
                    value += token[1:-1].replace("''", "'")
                elif token.startswith(":") and token[1:] in self.variables:
                    value += self.variables[token[1:]]
                else:
                    value += token
            self.variables[words[1]] = value
        elif command == "\\getenv" and len(words) == 3:
            self.variables[words[1]] = os.environ.get(words[2], "")

    def statements(self):
        """Yields (line number, statement text, copy data or None)."""
        lines = self.text.split("\n")
        buffer, start, i = [], None, 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not buffer and line.lstrip().startswith("\\"):
                self.meta(line.strip())
                continue
            # A meta-command ends a statement line (`SELECT ... \gset`): run what came before.
            code_part, meta = split_meta(line) if buffer or line.strip() else (line, None)
            if start is None and code_part.strip() and not code_part.strip().startswith("--"):
                start = i
            buffer.append(code_part)
            text = "\n".join(buffer)
            pieces = split_statements(text)
            complete, rest = pieces[:-1], pieces[-1]
            for statement in complete:
                statement = statement.strip()
                if not strip_comments(statement).strip():
                    continue
                statement = self.expand(statement)
                data = None
                if re.search(r"\bfrom\s+stdin\b", strip_comments(statement), re.I) and \
                        re.match(r"\s*copy\b", strip_comments(statement), re.I):
                    block = []
                    while i < len(lines) and lines[i] != "\\.":
                        block.append(lines[i] + "\n")
                        i += 1
                    i += 1
                    data = "".join(block).encode()
                else:
                    m = re.match(r"(?is)(\s*copy\s+.*?\bfrom\s+)'((?:[^']|'')*)'(.*)$",
                                 strip_comments(statement))
                    if m:
                        path = m.group(2).replace("''", "'")
                        try:
                            with open(path, "rb") as f:
                                data = f.read()
                            statement = m.group(1) + "STDIN" + m.group(3)
                        except OSError:
                            pass
                yield start, statement, data
                start = None
            buffer = [rest] if rest.strip() else []
            if not buffer:
                start = None
            if meta is not None:
                if buffer and strip_comments("\n".join(buffer)).strip():
                    yield start, self.expand("\n".join(buffer).strip()), None
                buffer, start = [], None
                self.meta(meta)
        tail = "\n".join(buffer).strip()
        if strip_comments(tail).strip():
            yield start, self.expand(tail), None


def lex(text):
    """Splits SQL text into ("code" | "quoted", piece) runs: quoted runs are string literals,
    quoted identifiers, dollar-quoted bodies and comments."""
    i, n, start = 0, len(text), 0
    while i < n:
        c = text[i]
        end = None
        if c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            end = n if j < 0 else j
        elif c == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            end = j
        elif c == "'":
            escape = i > 0 and text[i - 1] in "eE" and (i < 2 or not text[i - 2].isalnum())
            j = i + 1
            while j < n:
                if escape and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == "'":
                    if j + 1 < n and text[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            end = min(j + 1, n)
        elif c == '"':
            j = text.find('"', i + 1)
            end = n if j < 0 else j + 1
        elif c == "$" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", text[i:])
            if m:
                tag = m.group(0)
                j = text.find(tag, i + len(tag))
                end = n if j < 0 else j + len(tag)
        if end is not None:
            if start < i:
                yield "code", text[start:i]
            yield "quoted", text[i:end]
            i = start = end
        else:
            i += 1
    if start < n:
        yield "code", text[start:]


def strip_comments(text):
    return "".join(p if k == "code" or not p.startswith(("--", "/*")) else " "
                   for k, p in lex(text))


def split_statements(text):
    """Splits at semicolons outside quotes, comments and parentheses; the last piece is what
    is left without a semicolon."""
    pieces, current, depth = [], [], 0
    for kind, piece in lex(text):
        if kind != "code":
            current.append(piece)
            continue
        for ch in piece:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if ch == ";" and depth == 0:
                pieces.append("".join(current))
                current = []
            else:
                current.append(ch)
    pieces.append("".join(current))
    return pieces


def split_meta(line):
    """A line's SQL and a trailing meta-command (`... \\gset`), outside quotes."""
    position = 0
    for kind, piece in lex(line):
        if kind == "code":
            at = piece.find("\\")
            if at >= 0:
                cut = position + at
                return line[:cut], line[cut:].strip()
        position += len(piece)
    return line, None


# Engram's statement_timeout in the run; a statement that takes longer than SLOW_SECONDS is
# reported.
ENGRAM_TIMEOUT_SECONDS = 5
SLOW_SECONDS = 4.0

# --- running a statement ---------------------------------------------------------------------


class Server:
    def __init__(self, conninfo):
        self.conninfo = conninfo
        self.conn = None

    def connect(self):
        deadline = time.time() + 20
        while True:
            conn = pq.PGconn.connect(self.conninfo.encode())
            if conn.status == pq.ConnStatus.OK:
                self.conn = conn
                return
            if time.time() > deadline:
                raise SystemExit(f"cannot connect to {self.conninfo}: "
                                 f"{conn.error_message.decode(errors='replace')}")
            time.sleep(0.2)

    def alive(self):
        return self.conn is not None and self.conn.status == pq.ConnStatus.OK

    def run(self, statement, data):
        """("ok", tag, columns, rows) or ("error", sqlstate, message) or ("lost", message)."""
        conn = self.conn
        result = conn.exec_(statement.encode())
        outcome = None
        while result is not None:
            status = result.status
            if status == pq.ExecStatus.COPY_IN:
                if data:
                    conn.put_copy_data(data)
                conn.put_copy_end()
            elif status == pq.ExecStatus.COPY_OUT:
                rows = []
                while True:
                    n, chunk = conn.get_copy_data(0)
                    if n < 0:
                        break
                    rows.append(bytes(chunk).decode(errors="replace"))
                outcome = ("ok", "COPY OUT", 1, [(r,) for r in rows])
            elif status == pq.ExecStatus.FATAL_ERROR:
                sqlstate = result.error_field(pq.DiagnosticField.SQLSTATE)
                message = result.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b""
                if sqlstate is None:
                    outcome = ("lost", (conn.error_message or b"").decode(errors="replace"))
                else:
                    outcome = ("error", sqlstate.decode(), message.decode(errors="replace"))
            elif status in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK,
                            pq.ExecStatus.EMPTY_QUERY):
                if outcome is None or outcome[0] != "error":
                    rows = []
                    for r in range(result.ntuples):
                        rows.append(tuple(text(result.get_value(r, c))
                                          for c in range(result.nfields)))
                    tag = (result.command_status or b"").decode()
                    outcome = ("ok", tag, result.nfields, rows)
            else:
                outcome = ("error", "?", f"status {status}")
            if status in (pq.ExecStatus.COPY_IN, pq.ExecStatus.COPY_OUT):
                result = conn.get_result()
                continue
            result = conn.get_result() if status == pq.ExecStatus.COPY_IN else None
        if outcome is None or conn.status != pq.ConnStatus.OK:
            return ("lost", (conn.error_message or b"").decode(errors="replace").strip())
        return outcome


def text(value):
    return None if value is None else bytes(value).decode(errors="replace")


def ordered(statement):
    return re.search(r"\border\s+by\b", strip_comments(statement), re.I) is not None


def same(pg, en, statement):
    if pg[0] != en[0]:
        return False
    if pg[0] == "error":
        return pg[1][:2] == en[1][:2]
    if pg[0] == "ok":
        _, pg_tag, pg_cols, pg_rows = pg
        _, en_tag, en_cols, en_rows = en
        if pg_tag != en_tag or pg_cols != en_cols:
            return False
        if ordered(statement):
            return pg_rows == en_rows
        key = lambda row: tuple((v is None, v or "") for v in row)  # noqa: E731
        return sorted(pg_rows, key=key) == sorted(en_rows, key=key)
    return False


def describe(outcome):
    if outcome[0] == "ok":
        rows = outcome[3]
        shown = "; ".join("|".join("NULL" if v is None else v for v in row) for row in rows[:3])
        more = f" (+{len(rows) - 3} rows)" if len(rows) > 3 else ""
        return f"{outcome[1]} [{shown}]{more}"[:300]
    if outcome[0] == "error":
        return f"ERROR {outcome[1]}: {outcome[2]}"[:300]
    return f"CONNECTION LOST: {outcome[1]}"[:300]


class Engram:
    """An in-memory `engram serve` on a free loopback port, started again for each file."""

    def __init__(self, binary, log):
        self.binary, self.log, self.process = binary, log, None

    def start(self):
        self.stop()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [self.binary, "serve", "--listen", f"127.0.0.1:{port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        return f"host=127.0.0.1 port={port} user=postgres dbname=engram"

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def crashed(self):
        return self.process is not None and self.process.poll() is not None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg-admin", required=True)
    parser.add_argument("--pg", required=True)
    parser.add_argument("--engram", required=True)
    parser.add_argument("--setup", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--log", default=os.devnull)
    parser.add_argument("--show", type=int, default=0,
                        help="print the first N differing statements of each file")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    log = open(args.log, "ab")
    engram = Engram(args.engram, log)
    admin = Server(args.pg_admin)
    admin.connect()
    report, lost_total, crashes = [], 0, 0

    def fresh():
        """Both servers with an empty database; the setup script run on both."""
        outcome = admin.run("DROP DATABASE IF EXISTS regress WITH (FORCE)", None)
        assert outcome[0] == "ok", outcome
        outcome = admin.run("CREATE DATABASE regress", None)
        assert outcome[0] == "ok", outcome
        pg, en = Server(args.pg), Server(engram.start())
        pg.connect()
        en.connect()
        # Engram joins tables without a usable index by nested loops (no hash join yet): a
        # join of two 10,000-row tables takes seconds in a debug build. A shorter limit keeps
        # the run short; such a statement then counts as a difference.
        pg.run("SET statement_timeout = '20s'", None)
        en.run(f"SET statement_timeout = '{ENGRAM_TIMEOUT_SECONDS}s'", None)
        failed = 0
        if args.setup:
            for _, statement, data in Script(args.setup, {}).statements():
                pg_outcome, en_outcome = pg.run(statement, data), en.run(statement, data)
                if pg_outcome[0] == "ok" and en_outcome[0] != "ok":
                    failed += 1
                if en_outcome[0] == "lost":
                    en.connect()
        return pg, en, failed

    for path in args.files:
        name = os.path.splitext(os.path.basename(path))[0]
        pg, en, setup_failed = fresh()
        total = matched = lost = 0
        differences = []
        for line, statement, data in Script(path, {}).statements():
            total += 1
            pg_outcome = pg.run(statement, data)
            started = time.monotonic()
            en_outcome = en.run(statement, data)
            took = time.monotonic() - started
            if took > SLOW_SECONDS:
                print(f"{name}:{line}: Engram took {took:.1f} s: {statement[:200]}",
                      file=sys.stderr, flush=True)
            if en_outcome[0] == "lost":
                lost += 1
                crashed = engram.crashed()
                crashes += crashed
                print(f"{name}:{line}: Engram {'CRASHED' if crashed else 'dropped the connection'}"
                      f": {en_outcome[1]}\n  {statement[:300]}", file=sys.stderr)
                if crashed:
                    pg, en, _ = fresh()
                else:
                    en.connect()
            if pg_outcome[0] == "lost":
                pg.connect()
            if same(pg_outcome, en_outcome, statement):
                matched += 1
            else:
                differences.append({"line": line, "statement": statement[:500],
                                    "postgres": describe(pg_outcome),
                                    "engram": describe(en_outcome)})
        lost_total += lost
        rate = 100.0 * matched / total if total else 100.0
        print(f"{name:16} {matched:5}/{total:<5} {rate:5.1f}%"
              + (f"  (setup: {setup_failed} statements failed on Engram)" if setup_failed else "")
              + (f"  LOST THE CONNECTION {lost}x" if lost else ""), flush=True)
        for d in differences[:args.show]:
            print(f"  line {d['line']}: {d['statement'][:160]!r}\n"
                  f"    postgres: {d['postgres'][:160]}\n    engram:   {d['engram'][:160]}")
        report.append({"file": name, "statements": total, "matched": matched, "lost": lost,
                       "setup_failed": setup_failed, "differences": differences})
    engram.stop()
    total = sum(r["statements"] for r in report)
    matched = sum(r["matched"] for r in report)
    print(f"{'all':16} {matched:5}/{total:<5} {100.0 * matched / max(total, 1):5.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if lost_total:
        print(f"Engram lost the connection {lost_total} times ({crashes} crashes)",
              file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
