//! Deep statements: how far an expression may nest, and the stack deep recursion runs on.
//!
//! Parsing, binding, planning and evaluation all recurse over expression trees, and a short
//! statement can be deep: `SELECT 1+1+...+1` with 600 terms is 1.2 KB and 600 levels, and the
//! ORM query `WHERE id = 0 OR id = 1 OR ...` with 20,000 terms is 20,000 levels as sqlparser
//! builds it (operators of one precedence chain to the left in a loop, so parsing them takes
//! no stack, but every later walk of the tree does, and so does dropping it). Three things
//! keep such statements from overflowing a thread's stack, whichever thread runs them (a
//! server's tokio worker, an embedding application's thread):
//!
//! 1. **Long AND and OR chains are balanced** ([`normalize`]): 20,000 terms nest 15 levels
//!    deep. PostgreSQL keeps such a chain flat, one node with many arguments; the terms keep
//!    their order, and left-to-right evaluation with short-circuits evaluates the same terms
//!    whichever way the chain is bracketed.
//! 2. **Nothing nests deeper than [`EXPRESSION_DEPTH_MAX`].** A deeper tree is cut apart
//!    without recursion (its drop would recurse as deep as it is) and the statement fails
//!    with SQLSTATE 54001, as PostgreSQL's "stack depth limit exceeded" does (PostgreSQL
//!    gives it at about 5,000 chained `+` terms with its default 2 MB `max_stack_depth`).
//!    sqlparser's own recursive descent (parentheses, subqueries, unary operators) counts
//!    its depth against [`PARSER_RECURSION_MAX`] and grows its stack itself (its
//!    `recursive-protection` feature).
//! 3. **Every recursive function of the front end runs through [`grow`]**, which moves onto
//!    a fresh stack segment of [`STACK_SEGMENT_BYTES`] when less than
//!    [`STACK_RED_ZONE_BYTES`] remain (`stacker`). The check compares the stack pointer
//!    with the thread's limit: a few instructions, so evaluation keeps it per node.
//!
//! Statements of at most [`NORMALIZE_MIN_BYTES`] skip step 1 and 2's walk: every level of a
//! tree takes at least one byte of text, so they cannot be deeper than that.

use crate::error::SqlError;
use sqlparser::ast as sp;
use sqlparser::ast::{VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// The deepest expression tree a statement may hold, counted in sqlparser's tree after AND
/// and OR chains are balanced (Engram's own trees are at most one level deeper: a typed
/// literal becomes a cast of a literal). Deeper trees fail with 54001. Ten thousand is twice
/// what PostgreSQL takes in a chain of `+`, and keeps a deep statement's stack segments in
/// the tens of megabytes while it is planned and run.
pub const EXPRESSION_DEPTH_MAX: usize = 10_000;

/// sqlparser's recursion counter: each parenthesis, unary operator, function call or data
/// type it descends into counts one, so that `-(` counts two and a scalar subquery three.
/// 4,000 takes expressions nested 1,000 deep in any of these forms. Each level of
/// parentheses takes about 4.5 KiB of stack in sqlparser, a subquery about 31 KiB (measured,
/// release and test builds alike), on segments sqlparser adds and frees as it goes.
pub const PARSER_RECURSION_MAX: usize = 4_000;

/// Statements at most this long are not walked by [`normalize`]: they hold at most this many
/// levels, which the recursion below takes without harm.
pub const NORMALIZE_MIN_BYTES: usize = 256;

/// Stack a recursive step may use before its next call of [`grow`], with room for dropping
/// what a failed step leaves (at most [`EXPRESSION_DEPTH_MAX`] levels of sqlparser's tree,
/// 73 bytes each, measured).
pub const STACK_RED_ZONE_BYTES: usize = 1 << 20;

/// Size of each stack segment [`grow`] adds.
pub const STACK_SEGMENT_BYTES: usize = 8 << 20;

/// Stack [`normalize`] runs on: sqlparser's visitor recursion over at most
/// [`EXPRESSION_DEPTH_MAX`] levels, plus [`PARSER_RECURSION_MAX`] levels of statements
/// around them. Only the pages it touches are ever resident.
const NORMALIZE_STACK_BYTES: usize = 64 << 20;

/// How deep [`teardown`] lets one drop recurse.
const TEARDOWN_DEPTH_MAX: usize = 64;

/// A chain of one logical operator is balanced once it has this many terms.
const BALANCE_TERMS_MIN: usize = 8;

const _: () = assert!(EXPRESSION_DEPTH_MAX * 73 < STACK_RED_ZONE_BYTES);
const _: () = assert!(STACK_RED_ZONE_BYTES < STACK_SEGMENT_BYTES);
const _: () = assert!(NORMALIZE_MIN_BYTES < EXPRESSION_DEPTH_MAX);
const _: () = assert!(TEARDOWN_DEPTH_MAX < EXPRESSION_DEPTH_MAX);

/// Runs `step` with at least [`STACK_RED_ZONE_BYTES`] of stack left: on a new segment if the
/// thread's stack has less.
#[inline(always)]
pub fn grow<R>(step: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE_BYTES, STACK_SEGMENT_BYTES, step)
}

/// Drops a tree node by node, for a `Drop` of a tree type: `detach` moves a node's children
/// to the vector (leaving leaves in their place), and every node detached is dropped once its
/// own children are, so no drop recurses.
pub(crate) fn dismantle<T>(root: &mut T, detach: fn(&mut T, &mut Vec<T>)) {
    let mut detached = Vec::new();
    detach(root, &mut detached);
    while let Some(mut node) = detached.pop() {
        detach(&mut node, &mut detached);
    }
}

/// The error for a statement nested too deep (PostgreSQL's words and SQLSTATE).
pub fn too_deep() -> SqlError {
    SqlError::new(
        "54001",
        format!(
            "stack depth limit exceeded: the statement nests expressions deeper than \
             {EXPRESSION_DEPTH_MAX} levels or parentheses and subqueries deeper than \
             {PARSER_RECURSION_MAX}; write a long list of alternatives as IN (...) or = ANY(...)"
        ),
    )
}

/// Balances the AND and OR chains of a freshly parsed tree (statements, an expression) and
/// checks its depth; a tree too deep is taken apart without deep recursion and fails with
/// [`too_deep`].
pub fn normalize<T: VisitMut>(tree: T) -> Result<T, SqlError> {
    stacker::maybe_grow(NORMALIZE_STACK_BYTES, NORMALIZE_STACK_BYTES, move || {
        let mut tree = tree;
        let mut walk =
            Walk { depth: 0, limit: EXPRESSION_DEPTH_MAX, balance: true, cut: Vec::new() };
        let _ = tree.visit(&mut walk);
        if walk.cut.is_empty() {
            return Ok(tree);
        }
        teardown(walk.cut);
        // What is left nests at most `EXPRESSION_DEPTH_MAX` deep: dropped here, on this stack.
        drop(tree);
        Err(too_deep())
    })
}

/// A walk over a tree that counts expression levels and cuts out every subtree that starts
/// deeper than `limit` (leaving a NULL literal in its place).
struct Walk {
    depth: usize,
    limit: usize,
    balance: bool,
    cut: Vec<sp::Expr>,
}

impl VisitorMut for Walk {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut sp::Expr) -> ControlFlow<()> {
        self.depth += 1;
        if self.depth > self.limit {
            self.cut.push(std::mem::replace(expr, placeholder()));
        } else if self.balance {
            balance(expr);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _expr: &mut sp::Expr) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

fn placeholder() -> sp::Expr {
    sp::Expr::value(sp::Value::Null)
}

/// Drops trees of any depth without recursing deeper than [`TEARDOWN_DEPTH_MAX`]: each is
/// walked to that depth, the subtrees below are cut off to be taken apart in turn, and the
/// shallow rest is dropped.
fn teardown(mut trees: Vec<sp::Expr>) {
    let mut walk = Walk { depth: 0, limit: TEARDOWN_DEPTH_MAX, balance: false, cut: Vec::new() };
    while let Some(mut tree) = trees.pop() {
        walk.depth = 0;
        let _ = tree.visit(&mut walk);
        drop(tree);
        trees.append(&mut walk.cut);
    }
}

/// Rebuilds a left-deep chain `((a OR b) OR c) OR ...` of one logical operator with at least
/// [`BALANCE_TERMS_MIN`] terms as a balanced tree of the same terms in the same order.
fn balance(expr: &mut sp::Expr) {
    let sp::Expr::BinaryOp { op, left, right } = &*expr else { return };
    if !matches!(op, sp::BinaryOperator::And | sp::BinaryOperator::Or) {
        return;
    }
    if matches!(&**right, sp::Expr::BinaryOp { op: inner, .. } if inner == op) {
        // Already balanced (a parsed chain's right operands are single terms: a bracketed
        // chain on the right is `Nested`).
        return;
    }
    let op = op.clone();
    // Count the chain before taking it apart: most are short.
    let mut terms = 2;
    let mut link: &sp::Expr = left;
    while let sp::Expr::BinaryOp { op: inner, left, .. } = link
        && *inner == op
        && terms < BALANCE_TERMS_MIN
    {
        terms += 1;
        link = left;
    }
    if terms < BALANCE_TERMS_MIN {
        return;
    }
    // Walk down the left spine, keeping each right operand; the last left is the first term.
    let mut rights = Vec::new();
    let mut current = std::mem::replace(expr, placeholder());
    loop {
        match current {
            sp::Expr::BinaryOp { op: inner, left, right } if inner == op => {
                rights.push(*right);
                current = *left;
            }
            first => {
                rights.push(first);
                break;
            }
        }
    }
    rights.reverse();
    let join = |left, right| sp::Expr::BinaryOp {
        left: Box::new(left),
        op: op.clone(),
        right: Box::new(right),
    };
    *expr = balanced(rights, &join).expect("a chain has terms");
}

/// `terms` in their order, joined two by two by `join` into a balanced tree (`None` when
/// there are none): a chain of n terms nests log2(n) deep, and so does the recursion here.
pub(crate) fn balanced<T>(terms: Vec<T>, join: &dyn Fn(T, T) -> T) -> Option<T> {
    fn build<T>(terms: &mut std::vec::IntoIter<T>, count: usize, join: &dyn Fn(T, T) -> T) -> T {
        if count == 1 {
            return terms.next().expect("as many terms as counted");
        }
        let left = build(terms, count / 2, join);
        let right = build(terms, count - count / 2, join);
        join(left, right)
    }
    let count = terms.len();
    (count > 0).then(|| build(&mut terms.into_iter(), count, join))
}
