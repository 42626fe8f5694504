//! The server with a real driver (tokio-postgres) and with raw sockets: prepared statements
//! without parameter types, binary results, transactions, serialization failures and retry,
//! COPY, portals with row limits, errors with SQLSTATEs, limits, authentication, clients that
//! send garbage or vanish, and many connections at once.

use engram_engine::{Config, Durability, Protocol};
use engram_server::fuzzing::startup_packet;
use engram_server::{AuthMethod, Server, ServerConfig, ServerHandle, User};
use engram_sql::SqlDb;
use futures::SinkExt;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls};

fn start(config: ServerConfig) -> (ServerHandle, Arc<SqlDb>) {
    let db = SqlDb::open(Config { durability: Durability::Off, ..Config::default() }).unwrap();
    let config = ServerConfig { listen: "127.0.0.1:0".into(), threads: 2, ..config };
    (Server::start(Arc::clone(&db), config).unwrap(), db)
}

async fn connect_as(
    server: &ServerHandle,
    user: &str,
    password: Option<&str>,
) -> Result<Client, tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(server.addr.port()).user(user).dbname("engram");
    if let Some(password) = password {
        config.password(password);
    }
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

async fn connect(server: &ServerHandle) -> Client {
    connect_as(server, "postgres", None).await.unwrap()
}

fn code(error: &tokio_postgres::Error) -> String {
    error.code().map_or_else(|| format!("no SQLSTATE: {error}"), |c| c.code().to_string())
}

#[tokio::test]
async fn prepared_statements_infer_types_and_return_binary_rows() {
    let (server, _db) = start(ServerConfig::default());
    let client = connect(&server).await;
    client
        .batch_execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), score FLOAT8, big BIGINT, ok BOOLEAN)")
        .await
        .unwrap();
    let insert = client.prepare("INSERT INTO t VALUES ($1, $2, $3, $4, $5)").await.unwrap();
    assert_eq!(insert.params(), &[Type::INT4, Type::VARCHAR, Type::FLOAT8, Type::INT8, Type::BOOL]);
    for i in 0..10i32 {
        let n = client
            .execute(
                &insert,
                &[
                    &i,
                    &format!("n{i}"),
                    &(f64::from(i) / 2.0),
                    &(i64::from(i) << 40),
                    &(i % 2 == 0),
                ],
            )
            .await
            .unwrap();
        assert_eq!(n, 1);
    }
    let select = client
        .prepare("SELECT id, name, score, big, ok FROM t WHERE id >= $1 ORDER BY id")
        .await
        .unwrap();
    assert_eq!(select.params(), &[Type::INT4]);
    let types: Vec<Type> = select.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, vec![Type::INT4, Type::VARCHAR, Type::FLOAT8, Type::INT8, Type::BOOL]);
    let rows = client.query(&select, &[&7i32]).await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].get::<_, i32>(0), 7);
    assert_eq!(rows[0].get::<_, &str>(1), "n7");
    assert_eq!(rows[0].get::<_, f64>(2), 3.5);
    assert_eq!(rows[2].get::<_, i64>(3), 9i64 << 40);
    assert!(!rows[2].get::<_, bool>(4));
    // NULLs both ways, and text-format simple queries.
    client
        .execute("UPDATE t SET name = $1 WHERE id = $2", &[&None::<String>, &1i32])
        .await
        .unwrap();
    let row = client.query_one("SELECT name FROM t WHERE id = 1", &[]).await.unwrap();
    assert_eq!(row.get::<_, Option<&str>>(0), None);
    let messages = client.simple_query("SELECT count(*) FROM t; SELECT 1 + 1").await.unwrap();
    let values: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(values, vec!["10".to_string(), "2".to_string()]);
}

#[tokio::test]
async fn transactions_commit_roll_back_and_fail() {
    let (server, _db) = start(ServerConfig::default());
    let mut client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)").await.unwrap();
    let txn = client.transaction().await.unwrap();
    txn.execute("INSERT INTO t VALUES (1, 1)", &[]).await.unwrap();
    txn.commit().await.unwrap();
    let txn = client.transaction().await.unwrap();
    txn.execute("INSERT INTO t VALUES (2, 2)", &[]).await.unwrap();
    txn.rollback().await.unwrap();
    let count: i64 = client.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(count, 1);
    // An error fails the block: 25P02 until ROLLBACK.
    client.batch_execute("BEGIN").await.unwrap();
    let error = client.execute("INSERT INTO t VALUES (1, 9)", &[]).await.unwrap_err();
    assert_eq!(code(&error), "23505");
    let error = client.query("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(code(&error), "25P02");
    client.batch_execute("ROLLBACK").await.unwrap();
    // Errors carry PostgreSQL's codes.
    for (sql, expected) in [
        ("SELEC 1", "42601"),
        ("SELECT * FROM nowhere", "42P01"),
        ("SELECT nope FROM t", "42703"),
        ("SELECT 1/0", "22012"),
        ("INSERT INTO t VALUES (3, 'x')", "22P02"),
    ] {
        let error = client.query(sql, &[]).await.unwrap_err();
        assert_eq!(code(&error), expected, "{sql}");
    }
    assert_eq!(client.query_one("SELECT 1", &[]).await.unwrap().get::<_, i32>(0), 1);
}

#[tokio::test]
async fn serialization_failures_are_40001_and_a_retry_succeeds() {
    let (server, _db) = start(ServerConfig::default());
    let a = connect(&server).await;
    let b = connect(&server).await;
    a.batch_execute("CREATE TABLE c (id INT PRIMARY KEY, n INT); INSERT INTO c VALUES (1, 0)")
        .await
        .unwrap();
    for client in [&a, &b] {
        client.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await.unwrap();
        let n: i32 = client.query_one("SELECT n FROM c WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(n, 0);
    }
    a.execute("UPDATE c SET n = 1 WHERE id = 1", &[]).await.unwrap();
    b.execute("UPDATE c SET n = 2 WHERE id = 1", &[]).await.unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    let error = b.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(error.code(), Some(&SqlState::T_R_SERIALIZATION_FAILURE), "{error}");
    // Its DETAIL says why.
    let detail = error.as_db_error().and_then(|e| e.detail()).unwrap_or_default();
    assert!(detail.contains("committed") && detail.contains("read_validation"), "{detail}");
    assert!(detail.contains("On relation \"c\", key (id)=(1)"), "{detail}");
    // The retry sees the first commit.
    b.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await.unwrap();
    let n: i32 = b.query_one("SELECT n FROM c WHERE id = 1", &[]).await.unwrap().get(0);
    b.execute("UPDATE c SET n = $1 WHERE id = 1", &[&(n + 10)]).await.unwrap();
    b.batch_execute("COMMIT").await.unwrap();
    let n: i32 = a.query_one("SELECT n FROM c WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(n, 11);
}

/// ALTER TABLE through the driver: a transaction that began before it keeps its version and
/// cannot write (40001, then a retry succeeds), added columns read their default in binary,
/// a widened column reads as the wider type, and a prepared statement whose rows changed
/// fails as PostgreSQL's does (0A000).
#[tokio::test]
async fn alter_table_versions_over_the_wire() {
    let (server, _db) = start(ServerConfig::default());
    let a = connect(&server).await;
    let b = connect(&server).await;
    a.batch_execute("CREATE TABLE v (id INT PRIMARY KEY, n SMALLINT); INSERT INTO v VALUES (1, 7)")
        .await
        .unwrap();
    let star = a.prepare("SELECT * FROM v WHERE id = $1").await.unwrap();
    b.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await.unwrap();
    let n: i16 = b.query_one("SELECT n FROM v WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(n, 7);
    // Neither waits for the other.
    a.batch_execute("ALTER TABLE v ADD COLUMN note TEXT DEFAULT 'hi', ALTER COLUMN n TYPE BIGINT")
        .await
        .unwrap();
    let row = b.query_one("SELECT * FROM v WHERE id = 1", &[]).await.unwrap();
    assert_eq!(row.len(), 2, "the older transaction reads its own version");
    let error = b.execute("UPDATE v SET n = 8 WHERE id = 1", &[]).await.unwrap_err();
    assert_eq!(error.code(), Some(&SqlState::T_R_SERIALIZATION_FAILURE), "{error}");
    let message = error.as_db_error().map_or_else(String::new, |e| e.message().to_string());
    assert!(message.contains("definition"), "{message}");
    b.batch_execute("ROLLBACK").await.unwrap();
    b.execute("UPDATE v SET n = 8000000000 WHERE id = 1", &[]).await.unwrap();
    let row = a.query_one("SELECT n, note FROM v WHERE id = 1", &[]).await.unwrap();
    assert_eq!(row.columns()[0].type_(), &Type::INT8);
    assert_eq!((row.get::<_, i64>(0), row.get::<_, String>(1)), (8_000_000_000, "hi".into()));
    let error = a.query(&star, &[&1i32]).await.unwrap_err();
    assert_eq!(code(&error), "0A000", "{error}");
    let again = a.prepare("SELECT * FROM v WHERE id = $1").await.unwrap();
    assert_eq!(a.query_one(&again, &[&1i32]).await.unwrap().len(), 3);
}

/// The pessimistic protocols over the wire: a refused lock is 40001 at the statement, the
/// session can roll back and retry, and the server keeps serving.
#[tokio::test]
async fn refused_locks_under_mv2pl_and_mvto_are_40001() {
    for protocol in [Protocol::Mv2pl, Protocol::Mvto] {
        let db = SqlDb::open(Config { durability: Durability::Off, protocol, ..Config::default() })
            .unwrap();
        let config =
            ServerConfig { listen: "127.0.0.1:0".into(), threads: 2, ..Default::default() };
        let server = Server::start(Arc::clone(&db), config).unwrap();
        let a = connect(&server).await;
        let b = connect(&server).await;
        a.batch_execute("CREATE TABLE c (id INT PRIMARY KEY, n INT); INSERT INTO c VALUES (1, 0)")
            .await
            .unwrap();
        a.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await.unwrap();
        let n: i32 = a.query_one("SELECT n FROM c WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(n, 0);
        // mv2pl: a's read lock refuses b's write. mvto: b (the later timestamp) writes, and a,
        // which read the version b replaced, may no longer write it.
        let b_update = b.execute("UPDATE c SET n = 2 WHERE id = 1", &[]).await;
        let refused = match protocol {
            Protocol::Mv2pl => b_update.unwrap_err(),
            _ => {
                b_update.unwrap();
                a.execute("UPDATE c SET n = 1 WHERE id = 1", &[]).await.unwrap_err()
            }
        };
        assert_eq!(code(&refused), "40001", "{protocol}: {refused}");
        a.batch_execute("ROLLBACK").await.unwrap();
        b.execute("UPDATE c SET n = n + 10 WHERE id = 1", &[]).await.unwrap();
        let n: i32 = a.query_one("SELECT n FROM c WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(n, if protocol == Protocol::Mv2pl { 10 } else { 12 }, "{protocol}");
        drop(server);
    }
}

#[tokio::test]
async fn copy_in_and_portals_with_row_limits() {
    let (server, _db) = start(ServerConfig::default());
    let mut client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, name TEXT)").await.unwrap();
    let sink = client.copy_in("COPY t FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let mut data = String::new();
    for i in 0..1000 {
        data.push_str(&format!("{i}\tname {i}\n"));
    }
    for chunk in data.as_bytes().chunks(777) {
        sink.send(bytes::Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    assert_eq!(sink.finish().await.unwrap(), 1000);
    // A bad COPY changes nothing.
    let sink = client.copy_in("COPY t FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"5000\tok\nnot a number\tx\n")).await.unwrap();
    assert_eq!(code(&sink.finish().await.unwrap_err()), "22P02");
    let count: i64 = client.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(count, 1000);
    // A portal read 300 rows at a time (Execute with a row limit, PortalSuspended).
    let txn = client.transaction().await.unwrap();
    let statement = txn.prepare("SELECT id FROM t ORDER BY id").await.unwrap();
    let portal = txn.bind(&statement, &[]).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let rows = txn.query_portal(&portal, 300).await.unwrap();
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 300);
        seen.extend(rows.iter().map(|r| r.get::<_, i32>(0)));
    }
    txn.commit().await.unwrap();
    assert_eq!(seen, (0..1000).collect::<Vec<i32>>());
}

fn raw_connect(server: &ServerHandle) -> std::net::TcpStream {
    let stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream
}

/// Reads until the server closes the connection (or 10 s pass); returns what it sent.
fn read_to_close(mut stream: std::net::TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let _ = stream.read_to_end(&mut all);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_vanishing_clients_leave_the_server_serving() {
    let (server, _db) =
        start(ServerConfig { max_message_bytes: 1 << 20, ..ServerConfig::default() });
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY)").await.unwrap();
    // Garbage instead of a startup packet; a startup then an unknown message type; a message
    // longer than max_message_bytes; a truncated message then silence; a client that leaves
    // mid-transaction.
    let cases: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        [startup_packet("postgres"), b"\xff\x00\x00\x00\x08abcd".to_vec()].concat(),
        [startup_packet("postgres"), vec![b'Q', 0x7f, 0, 0, 0]].concat(),
        [startup_packet("postgres"), b"P\x00\x00\x00\x10\x00select".to_vec()].concat(),
        [startup_packet("postgres"), b"Q\x00\x00\x00\x05\x00".to_vec()].concat(),
        // An empty Parse body (pgwire's decoder panics on it; the codec turns that into 08P01).
        [startup_packet("postgres"), b"P\x00\x00\x00\x04".to_vec()].concat(),
        (0..=255u8).cycle().take(70_000).collect(),
    ];
    for (i, bytes) in cases.into_iter().enumerate() {
        let mut stream = raw_connect(&server);
        stream.write_all(&bytes).unwrap();
        if i == 3 {
            // A half message and then gone.
            drop(stream);
            continue;
        }
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let _ = read_to_close(stream);
    }
    {
        let vanishing = connect(&server).await;
        vanishing.batch_execute("BEGIN; INSERT INTO t VALUES (1)").await.unwrap();
        drop(vanishing);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let count: i64 = client.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(count, 0, "the vanished client's transaction was rolled back");
    client.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
    assert_eq!(server.metrics.connections_open(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_connections_at_once_and_the_limit() {
    let (server, _db) = start(ServerConfig::default());
    let setup = connect(&server).await;
    setup.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, who INT)").await.unwrap();
    let server = Arc::new(server);
    let mut tasks = Vec::new();
    for i in 0..200i32 {
        let server = Arc::clone(&server);
        tasks.push(tokio::spawn(async move {
            let client = connect(&server).await;
            client.execute("INSERT INTO t VALUES ($1, $1)", &[&i]).await.unwrap();
            // Hold every connection open until all have inserted.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let row = client.query_one("SELECT who FROM t WHERE id = $1", &[&i]).await.unwrap();
            row.get::<_, i32>(0)
        }));
    }
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap(), i as i32);
    }
    let count: i64 = setup.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(count, 200);

    let (limited, _db) = start(ServerConfig { max_connections: 2, ..ServerConfig::default() });
    let _one = connect(&limited).await;
    let _two = connect(&limited).await;
    let refused = connect_as(&limited, "postgres", None).await.unwrap_err();
    assert_eq!(code(&refused), "53300");
}

#[tokio::test]
async fn scram_authentication() {
    let users =
        vec![User { name: "app".into(), password: Some("s3cret".into()), scram_verifier: None }];
    let (server, _db) =
        start(ServerConfig { auth: Some(AuthMethod::Scram), users, ..ServerConfig::default() });
    let client = connect_as(&server, "app", Some("s3cret")).await.unwrap();
    assert_eq!(client.query_one("SELECT 1", &[]).await.unwrap().get::<_, i32>(0), 1);
    let wrong = connect_as(&server, "app", Some("guess")).await.unwrap_err();
    assert_eq!(code(&wrong), "28P01");
    let unknown = connect_as(&server, "nobody", Some("s3cret")).await.unwrap_err();
    assert_eq!(code(&unknown), "28P01");
}

#[tokio::test]
async fn commits_are_answered_only_once_durable() {
    let dir = std::env::temp_dir().join(format!("engram-server-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = SqlDb::open(Config {
        data_dir: Some(dir.clone()),
        durability: Durability::Epoch,
        ..Config::default()
    })
    .unwrap();
    let server = Server::start(
        Arc::clone(&db),
        ServerConfig { listen: "127.0.0.1:0".into(), threads: 2, ..ServerConfig::default() },
    )
    .unwrap();
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY)").await.unwrap();
    let engine = Arc::clone(db.database());
    for i in 0..5i32 {
        // The commit's epoch is at least the global epoch read before it was sent.
        let before = engine.epochs().global();
        client.execute("INSERT INTO t VALUES ($1)", &[&i]).await.unwrap();
        assert!(engine.durable_epoch() >= before, "answered before epoch {before:?} was durable");
        let before = engine.epochs().global();
        client
            .batch_execute(&format!("BEGIN; INSERT INTO t VALUES ({}); COMMIT", 100 + i))
            .await
            .unwrap();
        assert!(engine.durable_epoch() >= before);
    }
    drop(client);
    server.stop();
    drop(engine);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_and_cancel_requests_stop_a_running_statement() {
    let (server, _db) = start(ServerConfig::default());
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, name TEXT)").await.unwrap();
    let sink = client.copy_in("COPY t (id) FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let data: String = (0..300_000).map(|i| format!("{i}\n")).collect();
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    sink.finish().await.unwrap();
    // About six million rows visited: seconds, unless stopped.
    let slow = "SELECT count(*) FROM t a, t b WHERE b.id < 20 AND a.name IS NULL";
    client.batch_execute("SET statement_timeout = '5ms'").await.unwrap();
    let error = client.query(slow, &[]).await.unwrap_err();
    assert_eq!(code(&error), "57014", "{error}");
    client.batch_execute("SET statement_timeout = 0").await.unwrap();
    // A cancel request from another connection, while the statement runs.
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let error = client.query(slow, &[]).await.unwrap_err();
    assert_eq!(code(&error), "57014", "{error}");
    assert!(format!("{error:?}").contains("user request"), "{error:?}");
    canceller.await.unwrap();
    // The connection goes on.
    let n: i64 = client.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(n, 300_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_transactions_time_out_and_metrics_are_served() {
    let (server, _db) = start(ServerConfig {
        idle_in_transaction_session_timeout_ms: 200,
        metrics_listen: Some("127.0.0.1:0".into()),
        ..ServerConfig::default()
    });
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY)").await.unwrap();
    client.batch_execute("BEGIN; INSERT INTO t VALUES (1)").await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        client.query("SELECT 1", &[]).await.is_err(),
        "the idle transaction's connection was closed"
    );
    let other = connect(&server).await;
    let n: i64 = other.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(n, 0, "the idle transaction was rolled back");
    // GET /metrics over HTTP.
    let addr = server.metrics_addr.expect("metrics address");
    let body = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut body = String::new();
        stream.read_to_string(&mut body).unwrap();
        body
    })
    .await
    .unwrap();
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(body.contains("engram_connections 1"), "{body}");
    assert!(body.contains("engram_statements_total"), "{body}");
    assert!(body.contains("engram_epoch_lag"), "{body}");
}

/// The Unix-domain socket: tokio-postgres connects through it and shares data with a TCP
/// client; an SSL request is refused with 'N' and the startup goes on in the clear, as
/// PostgreSQL answers on a Unix socket; garbage gets a closed connection; a stale socket
/// file left by a server that did not stop is replaced, one a live server answers on is
/// not, and the file is removed when the server stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unix_socket_serves_clients_and_refuses_ssl() {
    use std::os::unix::net::{UnixListener, UnixStream};
    let dir = std::env::temp_dir().join(format!("engram-unix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A socket file nobody listens on, as a killed server leaves it, on the port to be used.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let stale = dir.join(format!(".s.PGSQL.{port}"));
    drop(UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let db = SqlDb::open(Config { durability: Durability::Off, ..Config::default() }).unwrap();
    let config = ServerConfig {
        listen: format!("127.0.0.1:{port}"),
        unix_socket_dir: Some(dir.clone()),
        threads: 2,
        ..ServerConfig::default()
    };
    let server = Server::start(Arc::clone(&db), config.clone()).unwrap();
    let path = server.unix_socket.clone().unwrap();
    assert_eq!(path, stale);

    let mut unix_config = tokio_postgres::Config::new();
    unix_config.host_path(&dir).port(port).user("postgres").dbname("engram");
    let (local, connection) = unix_config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    local.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)").await.unwrap();
    let insert = local.prepare("INSERT INTO t VALUES ($1, $2)").await.unwrap();
    local.execute(&insert, &[&7i32, &"seven"]).await.unwrap();
    let tcp = connect(&server).await;
    let v: String = tcp.query_one("SELECT v FROM t WHERE id = 7", &[]).await.unwrap().get(0);
    assert_eq!(v, "seven");

    // An SSL request, raw: one byte 'N', then a normal startup.
    let mut raw = UnixStream::connect(&path).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]).unwrap();
    let mut answer = [0u8; 1];
    raw.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"N");
    raw.write_all(&startup_packet("postgres")).unwrap();
    let mut reply = [0u8; 9];
    raw.read_exact(&mut reply).unwrap();
    assert_eq!(reply, [b'R', 0, 0, 0, 8, 0, 0, 0, 0], "AuthenticationOk");
    drop(raw);
    // Garbage closes that connection only.
    let mut garbage = UnixStream::connect(&path).unwrap();
    garbage.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let _ = garbage.shutdown(std::net::Shutdown::Write);
    let _ = garbage.read_to_end(&mut Vec::new());
    let count: i64 = local.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
    assert_eq!(count, 1);

    // A socket file that a live server answers on is not taken over.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = probe.local_addr().unwrap().port();
    drop(probe);
    let live = dir.join(format!(".s.PGSQL.{other_port}"));
    let answering = UnixListener::bind(&live).unwrap();
    let refused = Server::bind(
        Arc::clone(&db),
        ServerConfig { listen: format!("127.0.0.1:{other_port}"), ..config },
    )
    .await;
    assert!(refused.is_err(), "a live socket was taken over");
    assert!(live.exists());
    drop(answering);
    drop(local);
    drop(tcp);
    server.stop();
    assert!(!path.exists(), "the socket file is removed at stop");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The system views through a driver: a prepared query of `pg_settings` sees a later SET (a
/// plan that reads a view is made again at each execution), `information_schema.columns`
/// and a type lookup in `pg_type` by OID return what the table and the wire say, in binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_views_answer_drivers() {
    let (server, _db) = start(ServerConfig::default());
    let client = connect(&server).await;
    client
        .batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR(8) NOT NULL)")
        .await
        .unwrap();
    let setting = client.prepare("SELECT setting FROM pg_settings WHERE name = $1").await.unwrap();
    let read = |rows: Vec<tokio_postgres::Row>| rows.first().map(|row| row.get::<_, String>(0));
    let before = read(client.query(&setting, &[&"statement_timeout"]).await.unwrap());
    client.batch_execute("SET statement_timeout = 4321").await.unwrap();
    let after = read(client.query(&setting, &[&"statement_timeout"]).await.unwrap());
    assert_ne!(before.as_deref(), Some("4321"));
    assert_eq!(after.as_deref(), Some("4321"));
    let columns = client
        .query(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_name = $1 ORDER BY ordinal_position",
            &[&"t"],
        )
        .await
        .unwrap();
    let columns: Vec<(String, String, String)> =
        columns.iter().map(|row| (row.get(0), row.get(1), row.get(2))).collect();
    assert_eq!(
        columns,
        [
            ("id".into(), "bigint".into(), "NO".into()),
            ("name".into(), "character varying".into(), "NO".into())
        ]
    );
    // The OID a RowDescription gives for `name` is the one pg_type lists as varchar.
    let described = client.prepare("SELECT name FROM t").await.unwrap();
    let oid = i64::from(described.columns()[0].type_().oid());
    let typname: String = client
        .query_one("SELECT typname FROM pg_catalog.pg_type WHERE oid = $1", &[&oid])
        .await
        .unwrap()
        .get(0);
    assert_eq!(typname, "varchar");
    let refused = client.execute("DELETE FROM pg_class", &[]).await.unwrap_err();
    assert_eq!(code(&refused), "42501");
}

/// A disk that fills and then has room again, through the wire, with no restart: while it is
/// full, the commit the log could not write ends its connection with 53100, later writes and
/// DDL are refused with 53100 on connections that stay usable, and reads of durable rows are
/// served; once there is room, the same server takes writes and DDL again, and a restart has
/// every acknowledged row. Before, writes stayed refused until a restart ("free space and
/// restart").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_53100_on_the_wire_until_there_is_room_again() {
    use engram_engine::wal::FaultyStorage;
    let storage = FaultyStorage::new(57);
    let open = |storage: &FaultyStorage| {
        SqlDb::open(Config {
            storage: Some(Arc::new(storage.clone())),
            durability: Durability::Epoch,
            epoch_interval_ms: 5,
            checkpoint_log_bytes: 0,
            ..Config::default()
        })
        .unwrap()
    };
    let db = open(&storage);
    let config =
        ServerConfig { listen: "127.0.0.1:0".into(), threads: 2, ..ServerConfig::default() };
    let server = Server::start(Arc::clone(&db), config).unwrap();
    let writer = connect(&server).await;
    writer.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)").await.unwrap();
    for i in 0..10i32 {
        writer.execute("INSERT INTO t VALUES ($1, 'acknowledged')", &[&i]).await.unwrap();
    }
    storage.limit_space(Some(storage.used_bytes()));
    let error = writer.execute("INSERT INTO t VALUES (10, 'in doubt')", &[]).await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    let reader = connect(&server).await;
    let rows = reader.query("SELECT id FROM t WHERE id < 10", &[]).await.unwrap();
    assert_eq!(rows.len(), 10);
    let error = reader.execute("INSERT INTO t VALUES (20, 'refused')", &[]).await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    let message = error.as_db_error().map(|e| e.message().to_string()).unwrap_or_default();
    assert!(message.contains("full") && message.contains("resume"), "{message}");
    let error = reader.batch_execute("CREATE TABLE u (x INT)").await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    // Room again: the logger writes at its next round, and the same connection's writes
    // are taken. (A bound on tries, a few milliseconds apart, not a timing.)
    storage.limit_space(None);
    let mut tries = 0;
    while let Err(error) = reader.execute("INSERT INTO t VALUES (30, 'after')", &[]).await {
        assert_eq!(code(&error), "53100", "{error}");
        tries += 1;
        assert!(tries < 5_000, "writes never resumed: {error}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    reader.batch_execute("CREATE TABLE u (x INT); INSERT INTO u VALUES (1)").await.unwrap();
    drop(reader);
    server.stop();
    drop(db);
    let db = open(&storage.crash());
    let mut session = db.session().unwrap();
    let ids = session.execute_one("SELECT id FROM t WHERE v <> 'in doubt' ORDER BY id").unwrap();
    let ids: Vec<String> =
        ids.text_rows().into_iter().map(|row| row[0].clone().unwrap_or_default()).collect();
    let expected: Vec<String> = (0..10).chain([30]).map(|id| id.to_string()).collect();
    assert_eq!(ids, expected);
    let u = session.execute_one("SELECT x FROM u").unwrap().text_rows();
    assert_eq!(u, vec![vec![Some("1".to_string())]]);
}

/// A full disk through the wire: the commit the log could not write ends its connection with
/// 53100 (its outcome unknown), as does a read of it; every later write is refused with 53100
/// while reads of durable rows and new connections are served, and a restart on a disk with
/// room again has every acknowledged commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_53100_on_the_wire_and_the_server_keeps_serving() {
    use engram_engine::wal::FaultyStorage;
    let storage = FaultyStorage::new(53);
    let open = |storage: &FaultyStorage| {
        SqlDb::open(Config {
            storage: Some(Arc::new(storage.clone())),
            durability: Durability::Epoch,
            epoch_interval_ms: 5,
            checkpoint_log_bytes: 0,
            ..Config::default()
        })
        .unwrap()
    };
    let serve = |db: &Arc<SqlDb>| {
        let config =
            ServerConfig { listen: "127.0.0.1:0".into(), threads: 2, ..ServerConfig::default() };
        Server::start(Arc::clone(db), config).unwrap()
    };
    let db = open(&storage);
    let server = serve(&db);
    let writer = connect(&server).await;
    writer.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)").await.unwrap();
    for i in 0..10i32 {
        writer.execute("INSERT INTO t VALUES ($1, 'acknowledged')", &[&i]).await.unwrap();
    }
    storage.fail_after(0);
    // The commit is installed, then the log cannot write it: its reply is an error, never an
    // acknowledgement, and the connection ends (53100: the disk, not the engine).
    let error = writer.execute("INSERT INTO t VALUES (10, 'in doubt')", &[]).await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    assert!(writer.is_closed() || writer.simple_query("SELECT 1").await.is_err());
    assert!(storage.failures() > 0);
    // A new connection reads what is durable, and each write it tries is refused with 53100
    // on a connection that stays usable: DML, DDL, and a transaction's COMMIT.
    let reader = connect(&server).await;
    let rows = reader.query("SELECT id FROM t WHERE id < 10 ORDER BY id", &[]).await.unwrap();
    assert_eq!(rows.len(), 10);
    let error = reader.execute("INSERT INTO t VALUES (20, 'refused')", &[]).await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    let message = error.as_db_error().map(|e| e.message().to_string()).unwrap_or_default();
    assert!(message.contains("disk") && message.contains("full"), "{message}");
    let error = reader.batch_execute("CREATE TABLE u (x INT)").await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    reader.batch_execute("BEGIN; UPDATE t SET v = 'refused' WHERE id = 1").await.unwrap();
    let error = reader.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    let v: String = reader.query_one("SELECT v FROM t WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(v, "acknowledged");
    // A read of the commit in doubt cannot be answered either: the row may not survive a
    // crash. Its connection ends with 53100; the next one is served.
    let doubting = connect(&server).await;
    let error = doubting.query_one("SELECT count(*) FROM t", &[]).await.unwrap_err();
    assert_eq!(code(&error), "53100", "{error}");
    let another = connect(&server).await;
    let rows = another.query("SELECT id FROM t WHERE id < 10 ORDER BY id", &[]).await.unwrap();
    assert_eq!(rows.len(), 10);
    drop((reader, doubting, another));
    server.stop();
    drop(db);
    // Room again, and a restart: every acknowledged row, none of the refused ones, and writes.
    let restarted = storage.crash();
    restarted.heal();
    let db = open(&restarted);
    let server = serve(&db);
    let client = connect(&server).await;
    let ids: Vec<i32> = client
        .query("SELECT id FROM t WHERE v = 'acknowledged' ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
    let refused: i64 =
        client.query_one("SELECT count(*) FROM t WHERE v = 'refused'", &[]).await.unwrap().get(0);
    assert_eq!(refused, 0);
    client.execute("INSERT INTO t VALUES (30, 'after')", &[]).await.unwrap();
    server.stop();
}

/// Statements that nest deep (`engram_sql::depth`): a chain of 600 `+` once overflowed a
/// connection thread's stack and killed the server. They run, in both protocols; beyond the
/// limits they fail with 54001; the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_statements_are_answered_and_the_server_goes_on() {
    let (server, _db) = start(ServerConfig::default());
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, n INT)").await.unwrap();
    for id in 0..20 {
        client.execute("INSERT INTO t VALUES ($1, $1)", &[&id]).await.unwrap();
    }
    let text_value = |messages: Vec<tokio_postgres::SimpleQueryMessage>| {
        messages.into_iter().find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
    };
    let sum = format!("SELECT {}", vec!["1"; 600].join("+"));
    assert_eq!(text_value(client.simple_query(&sum).await.unwrap()).as_deref(), Some("600"));
    let concat = format!("SELECT {}", vec!["'a'"; 1_000].join("||"));
    assert_eq!(text_value(client.simple_query(&concat).await.unwrap()), Some("a".repeat(1_000)));
    let ors: Vec<String> = (0..20_000).map(|i| format!("id = {}", i % 40)).collect();
    let count = format!("SELECT count(*) FROM t WHERE {}", ors.join(" OR "));
    assert_eq!(text_value(client.simple_query(&count).await.unwrap()).as_deref(), Some("20"));
    let ands: Vec<String> = (0..1_000).map(|i| format!("id >= {}", i % 10)).collect();
    let prepared =
        client.prepare(&format!("SELECT count(*) FROM t WHERE {}", ands.join(" AND "))).await;
    let row = client.query_one(&prepared.unwrap(), &[]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 11);
    let nested = format!("SELECT {}1{}", "(".repeat(1_000), ")".repeat(1_000));
    assert_eq!(text_value(client.simple_query(&nested).await.unwrap()).as_deref(), Some("1"));
    for too_deep in [
        format!("SELECT {}", vec!["1"; 1_000_000].join("+")),
        format!("SELECT {}1{}", "(".repeat(10_000), ")".repeat(10_000)),
    ] {
        let error = client.simple_query(&too_deep).await.unwrap_err();
        assert_eq!(code(&error), "54001");
        let error = client.prepare(&too_deep).await.unwrap_err();
        assert_eq!(code(&error), "54001");
    }
    assert_eq!(text_value(client.simple_query("SELECT 1").await.unwrap()).as_deref(), Some("1"));
    let again = connect(&server).await;
    assert_eq!(text_value(again.simple_query("SELECT 2").await.unwrap()).as_deref(), Some("2"));
}

/// A simple query of several statements is one transaction (PostgreSQL's implicit block), and
/// libpq's `options` take backslash escapes, as PostgreSQL splits them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_of_statements_is_one_transaction_and_options_take_escapes() {
    let (server, _db) = start(ServerConfig::default());
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE m (id INT PRIMARY KEY)").await.unwrap();
    let error = client
        .simple_query(
            "INSERT INTO m VALUES (1); INSERT INTO m VALUES (2); INSERT INTO m VALUES (1)",
        )
        .await
        .unwrap_err();
    assert_eq!(code(&error), "23505");
    let count = client.query_one("SELECT count(*) FROM m", &[]).await.unwrap();
    assert_eq!(count.get::<_, i64>(0), 0, "the string's first two inserts are rolled back");
    client.simple_query("INSERT INTO m VALUES (1); INSERT INTO m VALUES (2)").await.unwrap();
    let count = client.query_one("SELECT count(*) FROM m", &[]).await.unwrap();
    assert_eq!(count.get::<_, i64>(0), 2);

    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(server.addr.port()).user("postgres").dbname("engram").options(
        r"-c default_transaction_isolation=repeatable\ read -c default_transaction_read_only=on",
    );
    let (escaped, connection) = config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    let row = escaped.query_one("SHOW default_transaction_isolation", &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "repeatable read");
    let error = escaped.execute("INSERT INTO m VALUES (3)", &[]).await.unwrap_err();
    assert_eq!(code(&error), "25006");
}

/// Row locks over the wire: FOR UPDATE increments from four connections wait for each other
/// and lose nothing, with no error; NOWAIT is 55P03; a deadlock is 40P01 with a DETAIL; and
/// every other connection keeps being served while some wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_locks_wait_and_exclude_over_the_wire() {
    let (server, _db) = start(ServerConfig::default());
    let setup = connect(&server).await;
    setup
        .batch_execute(
            "CREATE TABLE c (id INT PRIMARY KEY, n INT); INSERT INTO c VALUES (1, 0), (2, 0)",
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let client = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            for _ in 0..50 {
                client.batch_execute("BEGIN").await.unwrap();
                let n: i32 = client
                    .query_one("SELECT n FROM c WHERE id = 1 FOR UPDATE", &[])
                    .await
                    .unwrap()
                    .get(0);
                client.execute("UPDATE c SET n = $1 WHERE id = 1", &[&(n + 1)]).await.unwrap();
                client.batch_execute("COMMIT").await.unwrap();
            }
        }));
    }
    // Served while the others queue for the row.
    for _ in 0..20 {
        setup.query_one("SELECT n FROM c WHERE id = 2", &[]).await.unwrap();
    }
    for task in tasks {
        task.await.unwrap();
    }
    let n: i32 = setup.query_one("SELECT n FROM c WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(n, 200, "increments lost");

    let a = connect(&server).await;
    let b = connect(&server).await;
    a.batch_execute("BEGIN; SELECT n FROM c WHERE id = 1 FOR UPDATE").await.unwrap();
    b.batch_execute("BEGIN; SELECT n FROM c WHERE id = 2 FOR UPDATE").await.unwrap();
    let error =
        b.batch_execute("SELECT n FROM c WHERE id = 1 FOR UPDATE NOWAIT").await.unwrap_err();
    assert_eq!(code(&error), "55P03");
    b.batch_execute("ROLLBACK; BEGIN; SELECT n FROM c WHERE id = 2 FOR UPDATE").await.unwrap();
    let waiting = tokio::spawn(async move {
        let result = a.batch_execute("SELECT n FROM c WHERE id = 2 FOR UPDATE").await;
        let _ = a.batch_execute("ROLLBACK").await;
        result
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mine = b.batch_execute("SELECT n FROM c WHERE id = 1 FOR UPDATE").await;
    let _ = b.batch_execute("ROLLBACK").await;
    let theirs = waiting.await.unwrap();
    let failed: Vec<_> = [mine, theirs].into_iter().filter_map(Result::err).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let db_error = failed[0].as_db_error().expect("a server error");
    assert_eq!(db_error.code().code(), "40P01");
    assert!(db_error.detail().is_some_and(|d| d.contains("relation \"c\"")), "{db_error:?}");
}

/// COMMIT and ROLLBACK outside a transaction, and BEGIN inside one, are warnings with
/// PostgreSQL's SQLSTATEs (25P01, 25001), not errors.
#[tokio::test]
async fn transaction_control_out_of_place_is_a_warning() {
    let (server, _db) = start(ServerConfig::default());
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(server.addr.port()).user("postgres").dbname("engram");
    let (client, mut connection) = config.connect(NoTls).await.unwrap();
    let (sender, mut notices) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = futures::StreamExt::next(&mut messages).await {
            if let tokio_postgres::AsyncMessage::Notice(notice) = message {
                let _ = sender.send(notice);
            }
        }
    });
    client.batch_execute("COMMIT").await.unwrap();
    client.batch_execute("BEGIN; BEGIN").await.unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let notice = notices.recv().await.unwrap();
        seen.push((notice.severity().to_string(), notice.code().code().to_string()));
    }
    assert_eq!(seen, [("WARNING".into(), "25P01".into()), ("WARNING".into(), "25001".into())]);
}

/// A raw protocol message: its type byte and body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Reads messages until ReadyForQuery; returns their type bytes and the SQLSTATEs of errors.
fn read_until_ready(stream: &mut std::net::TcpStream) -> (Vec<u8>, Vec<String>) {
    use std::io::Read;
    let (mut kinds, mut codes) = (Vec::new(), Vec::new());
    loop {
        let mut head = [0u8; 5];
        stream.read_exact(&mut head).unwrap();
        let len = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize - 4;
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body).unwrap();
        kinds.push(head[0]);
        if head[0] == b'E' {
            for field in body.split(|b| *b == 0) {
                if let Some((b'C', code)) = field.split_first() {
                    codes.push(String::from_utf8_lossy(code).into_owned());
                }
            }
        }
        if head[0] == b'Z' {
            return (kinds, codes);
        }
    }
}

/// Executes between two Syncs are one implicit transaction, as in PostgreSQL: a failing
/// Execute rolls back the ones before it in the pipeline; an Execute followed by its own Sync
/// commits by itself.
#[test]
fn a_pipeline_between_syncs_is_one_transaction() {
    use std::io::Write;
    let (server, db) = start(ServerConfig::default());
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    let mut startup = Vec::new();
    startup.extend_from_slice(&196_608u32.to_be_bytes());
    startup.extend_from_slice(b"user\0postgres\0database\0engram\0\0");
    let mut packet = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
    packet.extend_from_slice(&startup);
    stream.write_all(&packet).unwrap();
    read_until_ready(&mut stream);
    stream.write_all(&message(b'Q', b"CREATE TABLE p (id INT PRIMARY KEY)\0")).unwrap();
    read_until_ready(&mut stream);
    let parse = message(b'P', b"ins\0INSERT INTO p VALUES ($1)\0\0\0");
    let bind = |value: &str| {
        let mut body = b"\0ins\0\0\0\0\x01".to_vec();
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value.as_bytes());
        body.extend_from_slice(&[0, 0]);
        message(b'B', &body)
    };
    let execute = message(b'E', b"\0\0\0\0\0");
    let sync = message(b'S', b"");
    // 1, 2, then 1 again: the duplicate fails and takes 1 and 2 with it.
    let mut pipeline = parse.clone();
    for value in ["1", "2", "1"] {
        pipeline.extend_from_slice(&bind(value));
        pipeline.extend_from_slice(&execute);
    }
    pipeline.extend_from_slice(&sync);
    stream.write_all(&pipeline).unwrap();
    let (_, codes) = read_until_ready(&mut stream);
    assert_eq!(codes, ["23505"]);
    let mut session = db.session().unwrap();
    let count = |session: &mut engram_sql::Session| {
        session.execute_one("SELECT count(*) FROM p").unwrap().text_rows()[0][0].clone()
    };
    assert_eq!(count(&mut session).as_deref(), Some("0"));
    // Each Execute with its own Sync stands alone.
    let mut separate = Vec::new();
    for value in ["1", "2", "1"] {
        separate.extend_from_slice(&bind(value));
        separate.extend_from_slice(&execute);
        separate.extend_from_slice(&sync);
    }
    stream.write_all(&separate).unwrap();
    let codes: Vec<Vec<String>> = (0..3).map(|_| read_until_ready(&mut stream).1).collect();
    assert_eq!(codes, [vec![], vec![], vec!["23505".to_string()]]);
    assert_eq!(count(&mut session).as_deref(), Some("2"));
    // A pipeline that succeeds commits at its Sync.
    let mut pipeline = Vec::new();
    for value in ["3", "4"] {
        pipeline.extend_from_slice(&bind(value));
        pipeline.extend_from_slice(&execute);
    }
    pipeline.extend_from_slice(&sync);
    stream.write_all(&pipeline).unwrap();
    assert_eq!(read_until_ready(&mut stream).1, Vec::<String>::new());
    assert_eq!(count(&mut session).as_deref(), Some("4"));
}
