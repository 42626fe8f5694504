//! The scalar function library, as a registry: each function's names, arity, argument and
//! result types, volatility and body, in one table ([`FUNCTIONS`]). The binder finds a call's
//! function here ([`lookup`]) and coerces its arguments as the entry says; the evaluator calls
//! the body (`expr`); a catalog view can list the same entries. A function is added by writing
//! its body in the module of its family and one entry below.
//!
//! - [`string`]: `lower`, `upper`, `length`, `octet_length`, `btrim`, `ltrim`, `rtrim`, `substr`,
//!   `concat`, `repeat`, `replace`, `translate`, `left`, `right`, `lpad`, `rpad`, `strpos`,
//!   `starts_with`, `split_part`, `initcap`, `reverse`, `ascii`, `chr`;
//! - [`math`]: `abs`, `sign`, `round`, `trunc`, `floor`, `ceil`, `mod`, `div`, `gcd`, `lcm`,
//!   `sqrt`, `exp`, `ln`, `log`, `power`, `pi` (the last six in double precision), `random`;
//! - [`datetime`]: `now` and its aliases, `current_date`, `EXTRACT` / `date_part`, `date_trunc`;
//! - [`conditional`]: `coalesce`, `nullif`, `greatest`, `least`;
//! - [`info`]: `version`, `current_database`, `current_schema`, `current_user`, `pg_sleep`.
//!
//! Aggregates are the planner's (`plan::AggFunc`): they are not called once per row.

use super::{BExpr, Context};
use crate::error::SqlResult;
use crate::types::{Type, Value};
use std::collections::HashMap;
use std::sync::LazyLock;

mod conditional;
mod datetime;
mod info;
mod math;
mod string;

/// How a function's result type follows from its arguments' types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    Fixed(Type),
    /// The first argument's type.
    First,
    /// The common type of all the arguments (text when none has a type).
    Common,
    /// The common type of the first two arguments (bigint when they have none).
    CommonOfTwo,
}

/// What a function's arguments are coerced to before it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// Each argument to the result type.
    Result,
    /// By position; positions past the end take the last entry.
    Positions(&'static [Type]),
    /// The first to the result type, the others by position as `Positions`.
    ResultThen(&'static [Type]),
}

/// How a function's body is called.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// With every argument's value; a NULL argument makes the result NULL without a call.
    Strict(fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>),
    /// With every argument's value, NULLs included.
    Nulls(fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>),
    /// With the arguments unevaluated, and the row to evaluate them on: the body evaluates
    /// only what it needs (`coalesce`; functions of no argument).
    Lazy(fn(&[BExpr], &[Value], Type, &Context<'_>) -> SqlResult<Value>),
}

/// One scalar function.
#[derive(Debug)]
pub struct Function {
    /// Its name, then its aliases.
    pub names: &'static [&'static str],
    /// The fewest and the most arguments it takes.
    pub arity: (usize, usize),
    pub returns: Returns,
    pub takes: Takes,
    /// Whether two calls in one statement may give different results (`random`, `pg_sleep`):
    /// such a call is never evaluated once for many rows (an index probe, a constant).
    pub volatile: bool,
    pub body: Body,
}

impl Function {
    /// The same function, marked volatile.
    const fn volatile(self) -> Function {
        Function { volatile: true, ..self }
    }

    /// The name the function is listed by.
    pub fn name(&self) -> &'static str {
        self.names[0]
    }

    /// What argument `position` is coerced to, given the call's result type.
    pub fn argument_type(&self, position: usize, result: Type) -> Type {
        match self.takes {
            Takes::Result => result,
            Takes::Positions(types) => types[position.min(types.len() - 1)],
            Takes::ResultThen(_) if position == 0 => result,
            Takes::ResultThen(types) => types[(position - 1).min(types.len() - 1)],
        }
    }
}

/// No upper bound on the arguments.
const ANY: usize = usize::MAX;

const TEXT: &[Type] = &[Type::Text];
const TEXT_INT: &[Type] = &[Type::Text, Type::Int8];
const TEXT_INT_TEXT: &[Type] = &[Type::Text, Type::Int8, Type::Text];
const TEXT_TEXT_INT: &[Type] = &[Type::Text, Type::Text, Type::Int8];
const INT: &[Type] = &[Type::Int8];
const DOUBLE: &[Type] = &[Type::Float8];
const TEXT_TIMESTAMP: &[Type] = &[Type::Text, Type::Timestamp];

const fn strict(
    names: &'static [&'static str],
    arity: (usize, usize),
    returns: Returns,
    takes: Takes,
    body: fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function { names, arity, returns, takes, volatile: false, body: Body::Strict(body) }
}

/// A function called with NULL arguments too.
const fn nulls(
    names: &'static [&'static str],
    arity: (usize, usize),
    returns: Returns,
    body: fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function {
        names,
        arity,
        returns,
        takes: Takes::Result,
        volatile: false,
        body: Body::Nulls(body),
    }
}

/// A function whose body evaluates its arguments itself.
const fn lazy(
    names: &'static [&'static str],
    arity: (usize, usize),
    returns: Returns,
    body: fn(&[BExpr], &[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function {
        names,
        arity,
        returns,
        takes: Takes::Result,
        volatile: false,
        body: Body::Lazy(body),
    }
}

/// Every scalar function.
pub static FUNCTIONS: &[Function] = &[
    // Strings.
    strict(&["lower"], (1, 1), Returns::Fixed(Type::Text), Takes::Positions(TEXT), string::lower),
    strict(&["upper"], (1, 1), Returns::Fixed(Type::Text), Takes::Positions(TEXT), string::upper),
    strict(
        &["btrim", "trim"],
        (1, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        string::trim,
    ),
    strict(&["ltrim"], (1, 2), Returns::Fixed(Type::Text), Takes::Positions(TEXT), string::ltrim),
    strict(&["rtrim"], (1, 2), Returns::Fixed(Type::Text), Takes::Positions(TEXT), string::rtrim),
    strict(
        &["initcap"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        string::initcap,
    ),
    strict(
        &["reverse"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        string::reverse,
    ),
    strict(
        &["split_part"],
        (3, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_TEXT_INT),
        string::split_part,
    ),
    strict(
        &["starts_with"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Positions(TEXT),
        string::starts_with,
    ),
    strict(&["ascii"], (1, 1), Returns::Fixed(Type::Int4), Takes::Positions(TEXT), string::ascii),
    strict(&["chr"], (1, 1), Returns::Fixed(Type::Text), Takes::Positions(INT), string::chr),
    strict(
        &["octet_length"],
        (1, 1),
        Returns::Fixed(Type::Int4),
        Takes::Positions(TEXT),
        string::octet_length,
    ),
    strict(
        &["translate"],
        (3, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        string::translate,
    ),
    strict(
        &["length", "char_length", "character_length"],
        (1, 1),
        Returns::Fixed(Type::Int4),
        Takes::Positions(TEXT),
        string::length,
    ),
    strict(
        &["substr", "substring"],
        (2, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_INT),
        string::substr,
    ),
    Function {
        takes: Takes::Positions(TEXT),
        ..nulls(&["concat"], (1, ANY), Returns::Fixed(Type::Text), string::concat)
    },
    strict(
        &["repeat"],
        (2, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_INT),
        string::repeat,
    ),
    strict(
        &["replace"],
        (3, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        string::replace,
    ),
    strict(&["left"], (2, 2), Returns::Fixed(Type::Text), Takes::Positions(TEXT_INT), string::left),
    strict(
        &["right"],
        (2, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_INT),
        string::right,
    ),
    strict(
        &["lpad"],
        (2, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_INT_TEXT),
        string::lpad,
    ),
    strict(
        &["rpad"],
        (2, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_INT_TEXT),
        string::rpad,
    ),
    strict(&["strpos"], (2, 2), Returns::Fixed(Type::Int4), Takes::Positions(TEXT), string::strpos),
    // Numbers.
    strict(&["abs"], (1, 1), Returns::First, Takes::Result, math::abs),
    strict(&["round"], (1, 2), Returns::First, Takes::ResultThen(INT), math::round),
    strict(&["trunc"], (1, 2), Returns::First, Takes::ResultThen(INT), math::trunc),
    strict(&["sign"], (1, 1), Returns::First, Takes::Result, math::sign),
    strict(&["div"], (2, 2), Returns::CommonOfTwo, Takes::Result, math::div),
    strict(&["gcd"], (2, 2), Returns::Fixed(Type::Int8), Takes::Positions(INT), math::gcd),
    strict(&["lcm"], (2, 2), Returns::Fixed(Type::Int8), Takes::Positions(INT), math::lcm),
    strict(&["sqrt"], (1, 1), Returns::Fixed(Type::Float8), Takes::Positions(DOUBLE), math::sqrt),
    strict(&["exp"], (1, 1), Returns::Fixed(Type::Float8), Takes::Positions(DOUBLE), math::exp),
    strict(&["ln"], (1, 1), Returns::Fixed(Type::Float8), Takes::Positions(DOUBLE), math::ln),
    strict(
        &["log", "log10"],
        (1, 1),
        Returns::Fixed(Type::Float8),
        Takes::Positions(DOUBLE),
        math::log10,
    ),
    strict(
        &["power", "pow"],
        (2, 2),
        Returns::Fixed(Type::Float8),
        Takes::Positions(DOUBLE),
        math::power,
    ),
    lazy(&["pi"], (0, 0), Returns::Fixed(Type::Float8), math::pi),
    strict(&["floor"], (1, 1), Returns::First, Takes::Result, math::floor),
    strict(&["ceil", "ceiling"], (1, 1), Returns::First, Takes::Result, math::ceil),
    strict(&["mod"], (2, 2), Returns::CommonOfTwo, Takes::Result, math::modulo),
    lazy(&["random"], (0, 0), Returns::Fixed(Type::Float8), math::random).volatile(),
    // Dates and times.
    lazy(
        &[
            "now",
            "current_timestamp",
            "localtimestamp",
            "transaction_timestamp",
            "statement_timestamp",
        ],
        (0, 0),
        Returns::Fixed(Type::Timestamp),
        datetime::now,
    ),
    lazy(&["clock_timestamp"], (0, 0), Returns::Fixed(Type::Timestamp), datetime::clock_timestamp)
        .volatile(),
    lazy(&["current_date"], (0, 0), Returns::Fixed(Type::Date), datetime::current_date),
    strict(
        &["extract"],
        (2, 2),
        Returns::Fixed(Type::Numeric { precision: 0, scale: 0 }),
        Takes::Positions(TEXT_TIMESTAMP),
        datetime::extract,
    ),
    strict(
        &["date_part"],
        (2, 2),
        Returns::Fixed(Type::Float8),
        Takes::Positions(TEXT_TIMESTAMP),
        datetime::date_part,
    ),
    strict(
        &["date_trunc"],
        (2, 2),
        Returns::Fixed(Type::Timestamp),
        Takes::Positions(TEXT_TIMESTAMP),
        datetime::date_trunc,
    ),
    // Conditionals.
    lazy(&["coalesce"], (1, ANY), Returns::Common, conditional::coalesce),
    nulls(&["nullif"], (2, 2), Returns::First, conditional::nullif),
    nulls(&["greatest"], (1, ANY), Returns::Common, conditional::greatest),
    nulls(&["least"], (1, ANY), Returns::Common, conditional::least),
    // The session and the server.
    lazy(&["version"], (0, 0), Returns::Fixed(Type::Text), info::version),
    lazy(&["current_database"], (0, 0), Returns::Fixed(Type::Text), info::current_database),
    lazy(&["current_schema"], (0, 0), Returns::Fixed(Type::Text), info::current_schema),
    lazy(
        &["current_user", "session_user", "user"],
        (0, 0),
        Returns::Fixed(Type::Text),
        info::current_user,
    ),
    strict(&["pg_sleep"], (1, 1), Returns::Fixed(Type::Float8), Takes::Result, info::pg_sleep)
        .volatile(),
];

static BY_NAME: LazyLock<HashMap<&'static str, &'static Function>> = LazyLock::new(|| {
    FUNCTIONS
        .iter()
        .flat_map(|function| function.names.iter().map(move |name| (*name, function)))
        .collect()
});

/// The function a call of `name` (lower case) names.
pub fn lookup(name: &str) -> Option<&'static Function> {
    BY_NAME.get(name).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_names_one_function() {
        let names: usize = FUNCTIONS.iter().map(|function| function.names.len()).sum();
        assert_eq!(BY_NAME.len(), names, "a name is listed twice");
        for function in FUNCTIONS {
            assert!(function.arity.0 <= function.arity.1, "{}", function.name());
            if let Takes::Positions(types) | Takes::ResultThen(types) = function.takes {
                assert!(!types.is_empty(), "{}", function.name());
            }
            assert!(std::ptr::eq(lookup(function.name()).unwrap(), function));
        }
        assert!(lookup("no_such_function").is_none());
    }
}
