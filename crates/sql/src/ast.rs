//! Engram's own small SQL syntax tree: only what Engram runs. `parse.rs` builds it from
//! sqlparser's tree and rejects everything else there.

use crate::types::Type;
use engram_engine::Isolation;

#[derive(Debug, Clone)]
pub enum Statement {
    Query(Box<Query>),
    Insert(Box<Insert>),
    Update(Box<Update>),
    Delete(Box<Delete>),
    CreateTable(Box<CreateTable>),
    DropTable {
        names: Vec<String>,
        if_exists: bool,
        /// `CASCADE`: the views that read a dropped table go too.
        cascade: bool,
    },
    CreateView(Box<CreateView>),
    DropView {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    CreateSequence(Box<CreateSequence>),
    AlterSequence {
        name: String,
        if_exists: bool,
        /// `AS smallint | integer | bigint`.
        ty: Option<Type>,
        options: Vec<SequenceOption>,
        /// `RENAME TO name`.
        rename: Option<String>,
    },
    DropSequence {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    CreateIndex(Box<CreateIndex>),
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    Truncate {
        tables: Vec<String>,
    },
    AlterTable(Box<AlterTable>),
    /// `COMMENT ON kind name IS 'text' | NULL` (`ddl/comment.rs`).
    Comment {
        kind: CommentKind,
        /// The object's name; a column's is `table.column`.
        name: String,
        /// `None` (or an empty string) removes the comment.
        text: Option<String>,
    },
    Begin {
        isolation: Option<Isolation>,
        /// `READ ONLY` (true) or `READ WRITE` (false); `None`: the session's default.
        read_only: Option<bool>,
    },
    Commit,
    Rollback,
    /// `SAVEPOINT name`.
    Savepoint {
        name: String,
    },
    /// `ROLLBACK TO [SAVEPOINT] name`.
    RollbackTo {
        name: String,
    },
    /// `RELEASE [SAVEPOINT] name`.
    Release {
        name: String,
    },
    /// `SET TRANSACTION` (this transaction) or `SET SESSION CHARACTERISTICS AS TRANSACTION`.
    SetTransaction {
        isolation: Option<Isolation>,
        read_only: Option<bool>,
        session: bool,
    },
    /// `SET name = value`; `None` is `DEFAULT`.
    Set {
        name: String,
        value: Option<String>,
    },
    /// `RESET name` (`all` for `RESET ALL`): as `SET name TO DEFAULT`, with its own tag.
    Reset {
        name: String,
    },
    Show {
        name: String,
    },
    Prepare {
        name: String,
        types: Vec<Type>,
        statement: Box<Statement>,
    },
    Execute {
        name: String,
        params: Vec<Expr>,
    },
    Deallocate {
        name: Option<String>,
    },
    /// `DISCARD SEQUENCES` (`all: false`) or `DISCARD ALL`: forget the session's sequence
    /// values (and, for ALL, its prepared statements and settings).
    Discard {
        all: bool,
    },
    Explain(Box<Statement>),
    /// `COPY table FROM STDIN`: the data comes through [`crate::Session::copy_in`].
    Copy(Box<CopyFrom>),
    /// A statement Engram accepts and does nothing for (`VACUUM`, `ANALYZE`, `CHECKPOINT`
    /// runs a checkpoint): the command tag to answer.
    Utility {
        tag: String,
        checkpoint: bool,
    },
}

impl Statement {
    /// DDL takes the schema lock exclusively and may wait for other transactions.
    /// PostgreSQL's name of the command, as its "cannot execute ... in a read-only
    /// transaction" says it.
    pub fn command_name(&self) -> &'static str {
        match self {
            Statement::Insert(_) => "INSERT",
            Statement::Update(_) => "UPDATE",
            Statement::Delete(_) => "DELETE",
            Statement::Query(_) => "SELECT FOR UPDATE",
            Statement::CreateTable(_) => "CREATE TABLE",
            Statement::DropTable { .. } => "DROP TABLE",
            Statement::CreateView(_) => "CREATE VIEW",
            Statement::DropView { .. } => "DROP VIEW",
            Statement::CreateSequence(_) => "CREATE SEQUENCE",
            Statement::AlterSequence { .. } => "ALTER SEQUENCE",
            Statement::DropSequence { .. } => "DROP SEQUENCE",
            Statement::CreateIndex(_) => "CREATE INDEX",
            Statement::DropIndex { .. } => "DROP INDEX",
            Statement::Truncate { .. } => "TRUNCATE TABLE",
            Statement::AlterTable(_) => "ALTER TABLE",
            Statement::Comment { .. } => "COMMENT",
            _ => "this command",
        }
    }

    pub fn is_ddl(&self) -> bool {
        matches!(
            self,
            Statement::CreateTable(_)
                | Statement::DropTable { .. }
                | Statement::CreateView(_)
                | Statement::DropView { .. }
                | Statement::CreateSequence(_)
                | Statement::AlterSequence { .. }
                | Statement::DropSequence { .. }
                | Statement::CreateIndex(_)
                | Statement::DropIndex { .. }
                | Statement::Truncate { .. }
                | Statement::AlterTable(_)
                | Statement::Comment { .. }
        )
    }
}

/// What `COMMENT ON` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentKind {
    Table,
    Column,
    View,
    Sequence,
    Index,
}

impl CommentKind {
    /// The catalog key's prefix (`comment:table:name`).
    pub fn key(self) -> &'static str {
        match self {
            CommentKind::Table => "table",
            CommentKind::Column => "column",
            CommentKind::View => "view",
            CommentKind::Sequence => "sequence",
            CommentKind::Index => "index",
        }
    }
}

/// `CREATE SEQUENCE`.
#[derive(Debug, Clone)]
pub struct CreateSequence {
    pub name: String,
    pub if_not_exists: bool,
    /// `AS smallint | integer | bigint` (bigint when absent).
    pub ty: Option<Type>,
    pub options: Vec<SequenceOption>,
    /// `OWNED BY table.column`.
    pub owned_by: Option<(String, String)>,
}

/// How an identity column takes values a statement gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Identity {
    /// `GENERATED ALWAYS`: only from its sequence; an INSERT or UPDATE that gives a value
    /// other than DEFAULT fails.
    Always,
    /// `GENERATED BY DEFAULT`: from its sequence when none is given (as SERIAL).
    ByDefault,
}

/// One option of CREATE or ALTER SEQUENCE (or of an identity column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceOption {
    Increment(i64),
    /// `MINVALUE n` or `NO MINVALUE` (`None`).
    Min(Option<i64>),
    Max(Option<i64>),
    Start(i64),
    /// `RESTART [WITH n]` (ALTER only; `None`: at the start value).
    Restart(Option<i64>),
    Cache(i64),
    Cycle(bool),
}

#[derive(Debug, Clone)]
pub struct Query {
    /// `WITH` (common table expressions), visible to the body and to later ones.
    pub with: Vec<Cte>,
    /// `WITH RECURSIVE`: a CTE may read itself.
    pub recursive: bool,
    pub body: QueryBody,
    pub order_by: Vec<OrderItem>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub for_update: bool,
    /// The row lock a locking read takes (`FOR UPDATE` ...), and what it does at a held row.
    pub lock: (RowLockMode, WaitPolicy),
}

#[derive(Debug, Clone)]
pub enum QueryBody {
    Select(Box<Select>),
    Values(Vec<Vec<Expr>>),
    /// `left UNION | INTERSECT | EXCEPT [ALL] right`.
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<Query>,
        right: Box<Query>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

/// One `name [(columns)] AS (query)` of a WITH clause.
#[derive(Debug, Clone)]
pub struct Cte {
    pub name: String,
    pub columns: Vec<String>,
    pub query: Query,
}

/// What a FROM item reads when it is not a table by name.
#[derive(Debug, Clone)]
pub enum Source {
    /// A subquery (or `VALUES`) in FROM.
    Query(Query),
    /// A set-returning function (`generate_series`, `unnest`); `ordinality`: `WITH
    /// ORDINALITY`, a last column numbering the rows from 1.
    Function { name: String, args: Vec<Expr>, ordinality: bool },
}

#[derive(Debug, Clone)]
pub struct Select {
    pub distinct: bool,
    /// `DISTINCT ON (expressions)`: the first row (in ORDER BY order) of each set of rows
    /// equal in them.
    pub distinct_on: Vec<Expr>,
    pub items: Vec<SelectItem>,
    pub from: Vec<FromItem>,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    pub having: Option<Expr>,
}

#[derive(Debug, Clone)]
pub enum SelectItem {
    Wildcard,
    QualifiedWildcard(String),
    Expr { expr: Expr, alias: Option<String> },
}

#[derive(Debug, Clone)]
pub struct TableRef {
    /// The table's name; for a subquery or function, the name it is known by in the query.
    pub name: String,
    pub alias: Option<String>,
    /// Column aliases (`AS t(a, b)`).
    pub columns: Vec<String>,
    /// `None`: the table or view `name`.
    pub source: Option<Box<Source>>,
    /// `LATERAL (subquery)`: the subquery may read the FROM items before it. (A function in
    /// FROM always may, as in PostgreSQL.)
    pub lateral: bool,
}

impl TableRef {
    pub fn named(name: String) -> TableRef {
        TableRef { name, alias: None, columns: Vec::new(), source: None, lateral: false }
    }
}

#[derive(Debug, Clone)]
pub struct FromItem {
    pub table: TableRef,
    pub joins: Vec<Join>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    /// `a RIGHT JOIN b`: planned as `b LEFT JOIN a` with the columns in written order (the
    /// executor never sees it).
    Right,
    /// `a FULL JOIN b ON c`: planned as one derived source, `a LEFT JOIN b ON c` and the rows
    /// of `b` no row of `a` meets (`plan/join.rs`, `full_join`).
    Full,
}

#[derive(Debug, Clone)]
pub struct Join {
    pub table: TableRef,
    pub kind: JoinKind,
    pub on: Option<Expr>,
    /// `USING (columns)`: equal columns of the same name, shown once.
    pub using: Vec<String>,
    /// `NATURAL`: USING every column name the two sides share.
    pub natural: bool,
}

#[derive(Debug, Clone)]
pub struct OrderItem {
    pub expr: Expr,
    pub descending: bool,
    /// `None`: PostgreSQL's default (NULLS LAST ascending, FIRST descending).
    pub nulls_first: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    /// `IS DISTINCT FROM`: `<>` with NULL a value like any other (never NULL itself).
    IsDistinctFrom,
    /// `IS NOT DISTINCT FROM`: `=` with NULL a value like any other.
    IsNotDistinctFrom,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
            BinaryOp::Concat => "||",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::IsDistinctFrom => "IS DISTINCT FROM",
            BinaryOp::IsNotDistinctFrom => "IS NOT DISTINCT FROM",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
        )
    }

    /// The comparison with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Literal {
    Null,
    Bool(bool),
    /// A number as written: an integer, or a decimal (NUMERIC) with a point or exponent.
    Number(String),
    /// A quoted string: its type comes from the context (PostgreSQL's `unknown`).
    String(String),
}

#[derive(Debug)]
pub enum Expr {
    Column {
        table: Option<String>,
        name: String,
    },
    Literal(Literal),
    /// `$n`, numbered from 1.
    Param(usize),
    Negate(Box<Expr>),
    Not(Box<Expr>),
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    IsBool {
        expr: Box<Expr>,
        value: bool,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    InSubquery {
        expr: Box<Expr>,
        query: Box<Query>,
        negated: bool,
    },
    Exists {
        query: Box<Query>,
        negated: bool,
    },
    Subquery(Box<Query>),
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Cast {
        expr: Box<Expr>,
        ty: Type,
    },
    Function {
        name: String,
        args: Vec<Expr>,
        distinct: bool,
        star: bool,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// `DEFAULT` in an INSERT's VALUES or an UPDATE's SET.
    Default,
    /// `ARRAY[...]`.
    Array(Vec<Expr>),
    /// `ARRAY(subquery)`: the subquery's rows as an array.
    ArraySubquery(Box<Query>),
    /// `expr op ANY (array)`, or with `all`, `expr op ALL (array)`.
    AnyAll {
        expr: Box<Expr>,
        op: BinaryOp,
        array: Box<Expr>,
        all: bool,
    },
    /// `array[index]`.
    Subscript {
        array: Box<Expr>,
        index: Box<Expr>,
    },
    /// A call with `FILTER (WHERE ...)`, `OVER (...)` or an aggregate's `ORDER BY`:
    /// `function` is an [`Expr::Function`]; without a window it is an aggregate over the rows
    /// that pass the filter, taken in `order` (empty: any order).
    Over {
        function: Box<Expr>,
        filter: Option<Box<Expr>>,
        window: Option<Box<WindowSpec>>,
        order: Vec<OrderItem>,
    },
}

/// `OVER (PARTITION BY ... ORDER BY ... frame)`.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    pub partition: Vec<Expr>,
    pub order: Vec<OrderItem>,
    /// `None`: the default frame (`RANGE UNBOUNDED PRECEDING` to the current row's last
    /// peer with an ORDER BY, else the whole partition).
    pub frame: Option<Frame>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

#[derive(Debug, Clone)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

#[derive(Debug, Clone)]
pub struct Frame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

/// Dropping a tree takes it apart node by node instead of recursing: expressions may nest
/// [`EXPRESSION_DEPTH_MAX`](crate::depth::EXPRESSION_DEPTH_MAX) deep (`depth.rs`).
impl Drop for Expr {
    fn drop(&mut self) {
        crate::depth::dismantle(self, Expr::detach_children);
    }
}

/// A copy of a tree, on a new stack segment where it is deep (`depth.rs`).
impl Clone for Expr {
    fn clone(&self) -> Self {
        crate::depth::grow(|| self.clone_node())
    }
}

impl Expr {
    fn clone_node(&self) -> Self {
        let boxed = |e: &Expr| Box::new(e.clone());
        match self {
            Expr::Column { table, name } => {
                Expr::Column { table: table.clone(), name: name.clone() }
            }
            Expr::Literal(literal) => Expr::Literal(literal.clone()),
            Expr::Param(at) => Expr::Param(*at),
            Expr::Negate(e) => Expr::Negate(boxed(e)),
            Expr::Not(e) => Expr::Not(boxed(e)),
            Expr::Binary { op, left, right } => {
                Expr::Binary { op: *op, left: boxed(left), right: boxed(right) }
            }
            Expr::IsNull { expr, negated } => Expr::IsNull { expr: boxed(expr), negated: *negated },
            Expr::IsBool { expr, value, negated } => {
                Expr::IsBool { expr: boxed(expr), value: *value, negated: *negated }
            }
            Expr::InList { expr, list, negated } => {
                Expr::InList { expr: boxed(expr), list: list.clone(), negated: *negated }
            }
            Expr::InSubquery { expr, query, negated } => {
                Expr::InSubquery { expr: boxed(expr), query: query.clone(), negated: *negated }
            }
            Expr::Exists { query, negated } => {
                Expr::Exists { query: query.clone(), negated: *negated }
            }
            Expr::Subquery(query) => Expr::Subquery(query.clone()),
            Expr::Between { expr, low, high, negated } => Expr::Between {
                expr: boxed(expr),
                low: boxed(low),
                high: boxed(high),
                negated: *negated,
            },
            Expr::Like { expr, pattern, negated, case_insensitive } => Expr::Like {
                expr: boxed(expr),
                pattern: boxed(pattern),
                negated: *negated,
                case_insensitive: *case_insensitive,
            },
            Expr::Cast { expr, ty } => Expr::Cast { expr: boxed(expr), ty: *ty },
            Expr::Function { name, args, distinct, star } => Expr::Function {
                name: name.clone(),
                args: args.clone(),
                distinct: *distinct,
                star: *star,
            },
            Expr::Case { operand, whens, otherwise } => Expr::Case {
                operand: operand.as_deref().map(boxed),
                whens: whens.clone(),
                otherwise: otherwise.as_deref().map(boxed),
            },
            Expr::Default => Expr::Default,
            Expr::Array(items) => Expr::Array(items.clone()),
            Expr::ArraySubquery(query) => Expr::ArraySubquery(query.clone()),
            Expr::AnyAll { expr, op, array, all } => {
                Expr::AnyAll { expr: boxed(expr), op: *op, array: boxed(array), all: *all }
            }
            Expr::Subscript { array, index } => {
                Expr::Subscript { array: boxed(array), index: boxed(index) }
            }
            Expr::Over { function, filter, window, order } => Expr::Over {
                function: boxed(function),
                filter: filter.as_deref().map(boxed),
                window: window.clone(),
                order: order.clone(),
            },
        }
    }

    /// Moves the node's child expressions to `out`, leaving leaves in their place.
    fn detach_children(&mut self, out: &mut Vec<Expr>) {
        let mut take = |child: &mut Box<Expr>| {
            if !child.is_leaf() {
                out.push(std::mem::replace(&mut **child, Expr::Default));
            }
        };
        match self {
            Expr::Column { .. }
            | Expr::Literal(_)
            | Expr::Param(_)
            | Expr::Default
            | Expr::Exists { .. }
            | Expr::Subquery(_)
            | Expr::ArraySubquery(_) => {}
            Expr::Array(items) => out.append(items),
            Expr::AnyAll { expr: left, array: right, .. }
            | Expr::Subscript { array: left, index: right } => {
                take(left);
                take(right);
            }
            Expr::Negate(e)
            | Expr::Not(e)
            | Expr::IsNull { expr: e, .. }
            | Expr::IsBool { expr: e, .. }
            | Expr::Cast { expr: e, .. }
            | Expr::InSubquery { expr: e, .. } => take(e),
            Expr::Binary { left, right, .. } => {
                take(left);
                take(right);
            }
            Expr::Between { expr, low, high, .. } => {
                take(expr);
                take(low);
                take(high);
            }
            Expr::Like { expr, pattern, .. } => {
                take(expr);
                take(pattern);
            }
            Expr::InList { expr, list, .. } => {
                take(expr);
                out.append(list);
            }
            Expr::Function { args, .. } => out.append(args),
            Expr::Over { function, filter, .. } => {
                take(function);
                if let Some(filter) = filter {
                    take(filter);
                }
            }
            Expr::Case { operand, whens, otherwise } => {
                if let Some(operand) = operand {
                    take(operand);
                }
                if let Some(otherwise) = otherwise {
                    take(otherwise);
                }
                for (when, then) in whens.drain(..) {
                    out.push(when);
                    out.push(then);
                }
            }
        }
    }

    /// Whether the node has no child expressions.
    fn is_leaf(&self) -> bool {
        matches!(self, Expr::Column { .. } | Expr::Literal(_) | Expr::Param(_) | Expr::Default)
    }
}

#[derive(Debug, Clone)]
pub enum InsertSource {
    Values(Vec<Vec<Expr>>),
    Query(Box<Query>),
    DefaultValues,
}

#[derive(Debug, Clone)]
pub enum ConflictAction {
    Nothing,
    Update { assignments: Vec<(String, Expr)>, filter: Option<Expr> },
}

#[derive(Debug, Clone)]
pub struct OnConflict {
    pub columns: Vec<String>,
    pub action: ConflictAction,
}

#[derive(Debug, Clone)]
pub struct Insert {
    pub table: TableRef,
    pub columns: Vec<String>,
    pub source: InsertSource,
    pub on_conflict: Option<OnConflict>,
    pub returning: Vec<SelectItem>,
}

#[derive(Debug, Clone)]
pub struct Update {
    pub table: TableRef,
    pub assignments: Vec<(String, Expr)>,
    pub filter: Option<Expr>,
    pub returning: Vec<SelectItem>,
}

#[derive(Debug, Clone)]
pub struct Delete {
    pub table: TableRef,
    pub filter: Option<Expr>,
    pub returning: Vec<SelectItem>,
}

#[derive(Debug, Clone)]
pub struct ColumnDef {
    pub name: String,
    pub ty: Type,
    pub not_null: bool,
    /// The default as SQL text (kept in the catalog and parsed again at open).
    pub default: Option<String>,
    /// SERIAL / BIGSERIAL, or an identity column: the default is the next value of a
    /// sequence the column owns.
    pub serial: bool,
    /// `GENERATED ALWAYS | BY DEFAULT AS IDENTITY [(options)]`.
    pub identity: Option<(Identity, Vec<SequenceOption>)>,
    pub primary: bool,
    pub unique: bool,
}

/// `ALTER TABLE name action, ...`: the actions apply in order, as one statement.
#[derive(Debug, Clone)]
pub struct AlterTable {
    pub table: String,
    pub if_exists: bool,
    pub actions: Vec<AlterAction>,
}

#[derive(Debug, Clone)]
pub enum AlterAction {
    AddColumn {
        column: ColumnDef,
        if_not_exists: bool,
        /// The column's `REFERENCES`.
        foreign_key: Option<ForeignKeyDef>,
        /// The column's `CHECK`s.
        checks: Vec<CheckDef>,
    },
    AddForeignKey(ForeignKeyDef),
    AddCheck(CheckDef),
    DropColumn {
        name: String,
        if_exists: bool,
        /// `CASCADE`: other tables' foreign keys on the column go too.
        cascade: bool,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    RenameTable {
        to: String,
    },
    /// `SET DEFAULT` (the default as SQL text) or `DROP DEFAULT`.
    SetDefault {
        column: String,
        default: Option<String>,
    },
    /// `SET NOT NULL` or `DROP NOT NULL`.
    SetNotNull {
        column: String,
        not_null: bool,
    },
    SetType {
        column: String,
        ty: Type,
    },
    AddPrimaryKey {
        columns: Vec<String>,
    },
    AddUnique {
        name: Option<String>,
        columns: Vec<String>,
    },
    DropConstraint {
        name: String,
        if_exists: bool,
    },
}

#[derive(Debug, Clone)]
pub struct CreateTable {
    pub name: String,
    pub if_not_exists: bool,
    /// `CREATE TEMP TABLE`: the session's own, dropped when it ends.
    pub temporary: bool,
    pub columns: Vec<ColumnDef>,
    pub primary_key: Vec<String>,
    pub uniques: Vec<Vec<String>>,
    /// `REFERENCES` of a column and `FOREIGN KEY` constraints.
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// `CHECK` constraints of columns and of the table.
    pub checks: Vec<CheckDef>,
    /// `CREATE TABLE ... AS query`: the columns are the query's (`columns` only names them).
    pub query: Option<Box<Query>>,
}

/// What a foreign key does to the rows that reference a row deleted or updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FkAction {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    /// How `pg_constraint.confdeltype` / `confupdtype` write it.
    pub fn code(self) -> &'static str {
        match self {
            FkAction::NoAction => "a",
            FkAction::Restrict => "r",
            FkAction::Cascade => "c",
            FkAction::SetNull => "n",
            FkAction::SetDefault => "d",
        }
    }

    /// The SQL words, as `pg_get_constraintdef` and `information_schema` write them.
    pub fn words(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// `[CONSTRAINT name] FOREIGN KEY (columns) REFERENCES table [(columns)] [ON DELETE action]
/// [ON UPDATE action] [DEFERRABLE ...]`, or a column's `REFERENCES`.
#[derive(Debug, Clone)]
pub struct ForeignKeyDef {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub table: String,
    /// Empty: the referenced table's primary key.
    pub ref_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    /// `DEFERRABLE` (checked immediately all the same: `docs/sql.md`).
    pub deferrable: bool,
    /// `MATCH FULL`: a key with NULL in some of its columns but not all is refused.
    pub match_full: bool,
}

/// `[CONSTRAINT name] CHECK (expression)`: the expression as SQL text; `column` when it was
/// written as a column's (its default name is the column's).
#[derive(Debug, Clone)]
pub struct CheckDef {
    pub name: Option<String>,
    pub expr: String,
    pub column: Option<String>,
}

/// `CREATE [OR REPLACE] VIEW name [(columns)] AS query`.
#[derive(Debug, Clone)]
pub struct CreateView {
    pub name: String,
    pub or_replace: bool,
    pub columns: Vec<String>,
    pub query: Box<Query>,
    /// The query as SQL text: what the catalog keeps, parsed again where the view is read.
    pub text: String,
    /// The relations the query names (`depends` of the view's catalog entry).
    pub reads: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct CreateIndex {
    pub name: Option<String>,
    pub table: String,
    pub columns: Vec<String>,
    pub unique: bool,
    pub if_not_exists: bool,
}

/// A parsed `COPY ... FROM STDIN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyFrom {
    pub table: String,
    /// Empty: every column in table order.
    pub columns: Vec<String>,
    pub options: CopyOptions,
}

/// The format options PostgreSQL's COPY takes (those that change how data is read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    pub csv: bool,
    pub delimiter: u8,
    /// The string that stands for NULL (`\N` in text, the empty unquoted string in CSV).
    pub null: String,
    /// CSV: the first line is a header and is skipped.
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl CopyOptions {
    /// CSV format, with CSV's delimiter and NULL unless they were set.
    pub(crate) fn set_csv(&mut self) {
        if !self.csv {
            self.csv = true;
            if self.delimiter == b'\t' {
                self.delimiter = b',';
            }
            if self.null == "\\N" {
                self.null = String::new();
            }
        }
    }

    pub(crate) fn text() -> Self {
        CopyOptions {
            csv: false,
            delimiter: b'\t',
            null: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }
}

/// PostgreSQL's four row-lock strengths, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum RowLockMode {
    KeyShare,
    Share,
    NoKeyUpdate,
    #[default]
    Update,
}

impl RowLockMode {
    /// PostgreSQL's conflict table for row locks.
    pub fn conflicts(self, other: RowLockMode) -> bool {
        use RowLockMode::*;
        matches!(
            (self, other),
            (Update, _) | (_, Update) | (NoKeyUpdate, NoKeyUpdate | Share) | (Share, NoKeyUpdate)
        )
    }

    pub fn sql(self) -> &'static str {
        match self {
            RowLockMode::KeyShare => "FOR KEY SHARE",
            RowLockMode::Share => "FOR SHARE",
            RowLockMode::NoKeyUpdate => "FOR NO KEY UPDATE",
            RowLockMode::Update => "FOR UPDATE",
        }
    }
}

/// What a locking read does at a row another transaction holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WaitPolicy {
    /// Wait until it is released.
    #[default]
    Block,
    /// Fail with 55P03.
    NoWait,
    /// Leave the row out.
    SkipLocked,
}
