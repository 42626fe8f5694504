//! The scalar function library, as a registry: each function's names, arity, argument and
//! result types, volatility and body, in one table ([`FUNCTIONS`], and `json::FUNCTIONS`). The binder finds a call's
//! function here ([`lookup`]) and coerces its arguments as the entry says; the evaluator calls
//! the body (`expr`); a catalog view can list the same entries. A function is added by writing
//! its body in the module of its family and one entry below.
//!
//! - [`string`]: `lower`, `upper`, `length`, `octet_length`, `btrim`, `ltrim`, `rtrim`, `substr`,
//!   `concat`, `repeat`, `replace`, `translate`, `left`, `right`, `lpad`, `rpad`, `strpos`,
//!   `starts_with`, `split_part`, `initcap`, `reverse`, `ascii`, `chr`;
//! - [`regex`]: `regexp_like` (and the `~` operators), `regexp_count`, `regexp_substr`,
//!   `regexp_replace`;
//! - [`math`]: `abs`, `sign`, `round`, `trunc`, `floor`, `ceil`, `mod`, `div`, `gcd`, `lcm`,
//!   `sqrt`, `exp`, `ln`, `log`, `power`, `pi` (the last six in double precision), `random`;
//! - [`datetime`]: `now` and its aliases, `localtimestamp`, `localtime`, `clock_timestamp`,
//!   `current_date`, `EXTRACT` / `date_part`, `date_trunc`, `timezone` (`AT TIME ZONE`),
//!   `age`, `make_date`, `make_time`, `make_timestamp(tz)`, `make_interval`, `to_timestamp`,
//!   `justify_hours` / `_days` / `_interval`, `isfinite`, `gen_random_uuid`;
//! - [`sequence`]: `nextval`, `currval`, `setval`, `lastval`;
//! - [`conditional`]: `coalesce`, `nullif`, `greatest`, `least`;
//! - [`info`]: `version`, `current_database`, `current_schema`, `current_user`, `pg_sleep`;
//! - [`array`]: `array_length`, `cardinality`, `array_lower` / `_upper`, `array_ndims`,
//!   `array_dims`, `array_position(s)`, `array_append`, `array_prepend`, `array_cat`,
//!   `array_remove`, `array_replace`, `array_to_string`, `string_to_array`, and the operators
//!   `@>`, `<@` and `&&` (`arraycontains`, `arraycontained`, `arrayoverlap`);
//! - [`json`]: the `json` and `jsonb` operators (`json_arrow` is `->`, `json_arrow_text`
//!   `->>`, `json_path_op` `#>`, `json_path_text_op` `#>>`, `jsonb_contains` `@>`, ...) and
//!   functions (`to_jsonb`, `jsonb_build_object`, `jsonb_set`, `jsonb_typeof`, ...).
//!
//! Aggregates are the planner's (`plan::AggFunc`): they are not called once per row.

use super::{BExpr, Context};
use crate::error::SqlResult;
use crate::types::{Type, Value};
use std::collections::HashMap;
use std::sync::LazyLock;

mod array;
mod catalog;
mod conditional;
mod datetime;
mod info;
pub mod json;
mod math;
mod regex;
pub mod sequence;
mod string;

/// How a function's result type follows from its arguments' types.
#[derive(Debug, Clone, Copy)]
pub enum Returns {
    Fixed(Type),
    /// The first argument's type.
    First,
    /// The common type of all the arguments (text when none has a type).
    Common,
    /// The common type of the first two arguments (bigint when they have none).
    CommonOfTwo,
    /// Computed from the arguments' types (`date_trunc`'s follows its second argument's).
    Of(fn(&[Type]) -> Type),
}

/// What a function's arguments are coerced to before it is called.
#[derive(Debug, Clone, Copy)]
pub enum Takes {
    /// Each argument to the result type.
    Result,
    /// By position; positions past the end take the last entry.
    Positions(&'static [Type]),
    /// The first to the result type, the others by position as `Positions`.
    ResultThen(&'static [Type]),
    /// Computed from the position and the result type.
    Of(fn(usize, Type) -> Type),
    /// Polymorphic over arrays, by position (the last entry for positions past the end):
    /// the arrays take one array type and the elements its element type, the common type of
    /// them all (PostgreSQL's `anyarray` and `anyelement`).
    Array(&'static [Role]),
    /// Computed from all the arguments' types at once: each argument's type, or `None` when
    /// the function takes no such arguments (42883). The json functions, whose first argument
    /// is `json` or `jsonb` and whose others follow from it.
    Resolve(fn(&[Type]) -> Option<Vec<Type>>),
}

/// What an argument of a [`Takes::Array`] function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Array,
    Element,
    Fixed(Type),
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
    /// A set-returning function (`unnest`, `generate_series`, `jsonb_array_elements`, ...)
    /// called in a select list: its body returns the set's values as an array, which the
    /// executor spreads over as many rows (`exec.rs`, `Collector::emit`).
    pub set: bool,
    pub body: Body,
}

impl Function {
    /// The same function, marked volatile.
    const fn volatile(self) -> Function {
        Function { volatile: true, ..self }
    }

    /// The same function, set-returning.
    const fn set(self) -> Function {
        Function { set: true, ..self }
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
            Takes::Of(of) => of(position, result),
            Takes::Array(roles) => match roles[position.min(roles.len() - 1)] {
                Role::Fixed(ty) => ty,
                Role::Array | Role::Element => Type::Unknown,
            },
            Takes::Resolve(_) => Type::Unknown,
        }
    }
}

/// No upper bound on the arguments.
const ANY: usize = usize::MAX;

const TEXT: &[Type] = &[Type::Text];
const TEXT_INT: &[Type] = &[Type::Text, Type::Int8];
const TEXT_INT_TEXT: &[Type] = &[Type::Text, Type::Int8, Type::Text];
const TEXT_TEXT_INT: &[Type] = &[Type::Text, Type::Text, Type::Int8];
const TEXT_TEXT_INT_TEXT: &[Type] = &[Type::Text, Type::Text, Type::Int8, Type::Text];
const REGEXP_SUBSTR: &[Type] = &[Type::Text, Type::Text, Type::Int8, Type::Int8, Type::Text];
const INT: &[Type] = &[Type::Int8];
const BOOL: &[Type] = &[Type::Bool];
const OID_BOOL: &[Type] = &[Type::Int8, Type::Bool];
const OID_INT_BOOL: &[Type] = &[Type::Int8, Type::Int8, Type::Bool];
const OID_TEXT: &[Type] = &[Type::Int8, Type::Text];
const DOUBLE: &[Type] = &[Type::Float8];
const TEXT_TIMESTAMP: &[Type] = &[Type::Text, Type::Timestamp];
const TIMESTAMP: &[Type] = &[Type::Timestamp];
const SETVAL: &[Type] = &[Type::Text, Type::Int8, Type::Bool];
const INTERVAL: &[Type] = &[Type::Interval];
const INT_INT_DOUBLE: &[Type] = &[Type::Int8, Type::Int8, Type::Float8];
const MAKE_TIMESTAMP: &[Type] =
    &[Type::Int8, Type::Int8, Type::Int8, Type::Int8, Type::Int8, Type::Float8, Type::Text];
const MAKE_INTERVAL: &[Type] =
    &[Type::Int8, Type::Int8, Type::Int8, Type::Int8, Type::Int8, Type::Int8, Type::Float8];

const ARRAY_INT: &[Role] = &[Role::Array, Role::Fixed(Type::Int4)];
const ARRAY_ONLY: &[Role] = &[Role::Array];
const ARRAY_ELEMENT: &[Role] = &[Role::Array, Role::Element];
const ARRAY_ELEMENT_INT: &[Role] = &[Role::Array, Role::Element, Role::Fixed(Type::Int4)];
const ELEMENT_ARRAY: &[Role] = &[Role::Element, Role::Array];
const ARRAY_ARRAY: &[Role] = &[Role::Array, Role::Array];
const ARRAY_ELEMENT_ELEMENT: &[Role] = &[Role::Array, Role::Element, Role::Element];
const ARRAY_TEXT: &[Role] = &[Role::Array, Role::Fixed(Type::Text)];

/// The array type among a [`Takes::Array`] call's resolved argument types.
fn the_array(args: &[Type]) -> Type {
    args.iter().copied().find(|ty| matches!(ty, Type::Array(_))).unwrap_or(Type::Unknown)
}

/// `int[]`.
fn int_array(_: &[Type]) -> Type {
    Type::Array(crate::types::Elem::Int4)
}

/// `text[]`.
fn text_array(_: &[Type]) -> Type {
    Type::Array(crate::types::Elem::Text)
}

/// `date_trunc`'s result: a `timestamp` or an interval stays one; anything else (a date, an
/// untyped literal) is truncated as a `timestamptz`, PostgreSQL's preferred date/time type.
fn truncated(args: &[Type]) -> Type {
    match args.get(1) {
        Some(ty @ (Type::Timestamp | Type::Interval)) => *ty,
        _ => Type::Timestamptz,
    }
}

/// `AT TIME ZONE`'s result: a `timestamp` becomes an instant; an instant (or an untyped
/// literal, read as one) a `timestamp`.
fn zone_shifted(args: &[Type]) -> Type {
    match args.get(1) {
        Some(Type::Timestamp) => Type::Timestamptz,
        _ => Type::Timestamp,
    }
}

/// A field's name, then the value the result type says, then a zone's name.
fn field_then_result(position: usize, result: Type) -> Type {
    if position == 1 { result } else { Type::Text }
}

/// `date_bin`'s arguments: the stride, then two timestamps of the result's kind.
fn stride_then_result(position: usize, result: Type) -> Type {
    if position == 0 { Type::Interval } else { result }
}

/// A zone's name, then the timestamp kind the result is not.
fn zone_then_timestamp(position: usize, result: Type) -> Type {
    match (position, result) {
        (0, _) => Type::Text,
        (_, Type::Timestamptz) => Type::Timestamp,
        _ => Type::Timestamptz,
    }
}

const fn strict(
    names: &'static [&'static str],
    arity: (usize, usize),
    returns: Returns,
    takes: Takes,
    body: fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function { names, arity, returns, takes, volatile: false, set: false, body: Body::Strict(body) }
}

/// A json function (`Takes::Resolve`), strict unless `nulls`.
const fn resolved(
    names: &'static [&'static str],
    arity: (usize, usize),
    returns: Returns,
    resolve: fn(&[Type]) -> Option<Vec<Type>>,
    body: fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function {
        names,
        arity,
        returns,
        takes: Takes::Resolve(resolve),
        volatile: false,
        set: false,
        body: Body::Strict(body),
    }
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
        set: false,
        body: Body::Nulls(body),
    }
}

/// A [`Takes::Array`] function called with NULL arguments too (`array_append(NULL, 1)` is
/// `{1}`).
const fn polymorphic(
    names: &'static [&'static str],
    arity: (usize, usize),
    returns: Returns,
    roles: &'static [Role],
    body: fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function {
        names,
        arity,
        returns,
        takes: Takes::Array(roles),
        volatile: false,
        set: false,
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
        set: false,
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
    strict(
        &["regexp_like"],
        (2, 3),
        Returns::Fixed(Type::Bool),
        Takes::Positions(TEXT),
        regex::regexp_like,
    ),
    strict(
        &["regexp_count"],
        (2, 4),
        Returns::Fixed(Type::Int4),
        Takes::Positions(TEXT_TEXT_INT_TEXT),
        regex::regexp_count,
    ),
    strict(
        &["regexp_substr"],
        (2, 5),
        Returns::Fixed(Type::Text),
        Takes::Positions(REGEXP_SUBSTR),
        regex::regexp_substr,
    ),
    strict(
        &["regexp_replace"],
        (3, 4),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        regex::regexp_replace,
    ),
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
        &["now", "current_timestamp", "transaction_timestamp", "statement_timestamp"],
        (0, 0),
        Returns::Fixed(Type::Timestamptz),
        datetime::now,
    ),
    lazy(&["localtimestamp"], (0, 0), Returns::Fixed(Type::Timestamp), datetime::local_timestamp),
    lazy(&["localtime"], (0, 0), Returns::Fixed(Type::Time), datetime::local_time),
    lazy(
        &["clock_timestamp"],
        (0, 0),
        Returns::Fixed(Type::Timestamptz),
        datetime::clock_timestamp,
    )
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
        &["date_bin"],
        (3, 3),
        Returns::Of(truncated),
        Takes::Of(stride_then_result),
        datetime::date_bin,
    ),
    strict(
        &["date_trunc"],
        (2, 3),
        Returns::Of(truncated),
        Takes::Of(field_then_result),
        datetime::date_trunc,
    ),
    strict(
        &["timezone"],
        (2, 2),
        Returns::Of(zone_shifted),
        Takes::Of(zone_then_timestamp),
        datetime::timezone,
    ),
    strict(
        &["age"],
        (1, 2),
        Returns::Fixed(Type::Interval),
        Takes::Positions(TIMESTAMP),
        datetime::age,
    ),
    strict(
        &["make_date"],
        (3, 3),
        Returns::Fixed(Type::Date),
        Takes::Positions(INT),
        datetime::make_date,
    ),
    strict(
        &["make_time"],
        (3, 3),
        Returns::Fixed(Type::Time),
        Takes::Positions(INT_INT_DOUBLE),
        datetime::make_time,
    ),
    strict(
        &["make_timestamp"],
        (6, 6),
        Returns::Fixed(Type::Timestamp),
        Takes::Positions(MAKE_TIMESTAMP),
        datetime::make_timestamp,
    ),
    strict(
        &["make_timestamptz"],
        (6, 7),
        Returns::Fixed(Type::Timestamptz),
        Takes::Positions(MAKE_TIMESTAMP),
        datetime::make_timestamp,
    ),
    strict(
        &["make_interval"],
        (0, 7),
        Returns::Fixed(Type::Interval),
        Takes::Positions(MAKE_INTERVAL),
        datetime::make_interval,
    ),
    strict(
        &["to_timestamp"],
        (1, 1),
        Returns::Fixed(Type::Timestamptz),
        Takes::Positions(DOUBLE),
        datetime::to_timestamp,
    ),
    strict(
        &["justify_hours"],
        (1, 1),
        Returns::Fixed(Type::Interval),
        Takes::Positions(INTERVAL),
        datetime::justify_hours,
    ),
    strict(
        &["justify_days"],
        (1, 1),
        Returns::Fixed(Type::Interval),
        Takes::Positions(INTERVAL),
        datetime::justify_days,
    ),
    strict(
        &["justify_interval"],
        (1, 1),
        Returns::Fixed(Type::Interval),
        Takes::Positions(INTERVAL),
        datetime::justify_interval,
    ),
    strict(
        &["isfinite"],
        (1, 1),
        Returns::Fixed(Type::Bool),
        Takes::Positions(TIMESTAMP),
        datetime::isfinite,
    ),
    lazy(&["gen_random_uuid"], (0, 0), Returns::Fixed(Type::Uuid), datetime::gen_random_uuid)
        .volatile(),
    // Sequences.
    strict(
        &["nextval"],
        (1, 1),
        Returns::Fixed(Type::Int8),
        Takes::Positions(TEXT),
        sequence::nextval,
    )
    .volatile(),
    strict(
        &["currval"],
        (1, 1),
        Returns::Fixed(Type::Int8),
        Takes::Positions(TEXT),
        sequence::currval,
    )
    .volatile(),
    strict(
        &["setval"],
        (2, 3),
        Returns::Fixed(Type::Int8),
        Takes::Positions(SETVAL),
        sequence::setval,
    )
    .volatile(),
    lazy(&["lastval"], (0, 0), Returns::Fixed(Type::Int8), sequence::lastval).volatile(),
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
    // The catalog, for introspection.
    strict(
        &["pg_get_indexdef"],
        (1, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(OID_INT_BOOL),
        catalog::pg_get_indexdef,
    ),
    strict(
        &["pg_get_constraintdef"],
        (1, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(OID_BOOL),
        catalog::pg_get_constraintdef,
    ),
    strict(
        &["to_regclass"],
        (1, 1),
        Returns::Fixed(Type::Int8),
        Takes::Positions(TEXT),
        catalog::to_regclass,
    ),
    strict(
        &["to_regtype"],
        (1, 1),
        Returns::Fixed(Type::Int8),
        Takes::Positions(TEXT),
        catalog::to_regtype,
    ),
    strict(
        &["_engram_relation_name"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Positions(INT),
        catalog::relation_name,
    ),
    strict(
        &["pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible"],
        (1, 1),
        Returns::Fixed(Type::Bool),
        Takes::Positions(INT),
        catalog::pg_table_is_visible,
    ),
    strict(
        &["format_type"],
        (2, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(INT),
        catalog::format_type,
    ),
    strict(
        &["current_schemas"],
        (1, 1),
        Returns::Of(catalog::text_array),
        Takes::Positions(BOOL),
        catalog::current_schemas,
    ),
    strict(
        &["obj_description"],
        (1, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(OID_TEXT),
        catalog::obj_description,
    ),
    strict(
        &["col_description"],
        (2, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(INT),
        catalog::col_description,
    ),
    strict(
        &["shobj_description"],
        (2, 2),
        Returns::Fixed(Type::Text),
        Takes::Positions(OID_TEXT),
        catalog::no_description,
    ),
    strict(
        &["pg_get_expr"],
        (2, 3),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT_INT),
        catalog::pg_get_expr,
    ),
    strict(
        &["pg_get_userbyid"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Positions(INT),
        catalog::pg_get_userbyid,
    ),
    lazy(
        &[
            "has_table_privilege",
            "has_schema_privilege",
            "has_database_privilege",
            "has_column_privilege",
            "has_sequence_privilege",
            "has_function_privilege",
        ],
        (2, 4),
        Returns::Fixed(Type::Bool),
        catalog::has_privilege,
    ),
    strict(
        &["pg_encoding_to_char"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Positions(INT),
        catalog::pg_encoding_to_char,
    ),
    strict(
        &["quote_ident"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Positions(TEXT),
        catalog::quote_ident,
    ),
    // Arrays.
    strict(
        &["array_length"],
        (2, 2),
        Returns::Fixed(Type::Int4),
        Takes::Array(ARRAY_INT),
        array::array_length,
    ),
    strict(
        &["array_upper"],
        (2, 2),
        Returns::Fixed(Type::Int4),
        Takes::Array(ARRAY_INT),
        array::array_length,
    ),
    strict(
        &["array_lower"],
        (2, 2),
        Returns::Fixed(Type::Int4),
        Takes::Array(ARRAY_INT),
        array::array_lower,
    ),
    strict(
        &["cardinality"],
        (1, 1),
        Returns::Fixed(Type::Int4),
        Takes::Array(ARRAY_ONLY),
        array::cardinality,
    ),
    strict(
        &["array_ndims"],
        (1, 1),
        Returns::Fixed(Type::Int4),
        Takes::Array(ARRAY_ONLY),
        array::array_ndims,
    ),
    strict(
        &["array_dims"],
        (1, 1),
        Returns::Fixed(Type::Text),
        Takes::Array(ARRAY_ONLY),
        array::array_dims,
    ),
    polymorphic(
        &["array_position"],
        (2, 3),
        Returns::Fixed(Type::Int4),
        ARRAY_ELEMENT_INT,
        array::array_position,
    ),
    polymorphic(
        &["array_positions"],
        (2, 2),
        Returns::Of(int_array),
        ARRAY_ELEMENT,
        array::array_positions,
    ),
    polymorphic(
        &["array_append"],
        (2, 2),
        Returns::Of(the_array),
        ARRAY_ELEMENT,
        array::array_append,
    ),
    polymorphic(
        &["array_prepend"],
        (2, 2),
        Returns::Of(the_array),
        ELEMENT_ARRAY,
        array::array_prepend,
    ),
    polymorphic(&["array_cat"], (2, 2), Returns::Of(the_array), ARRAY_ARRAY, array::array_cat),
    polymorphic(
        &["array_remove"],
        (2, 2),
        Returns::Of(the_array),
        ARRAY_ELEMENT,
        array::array_remove,
    ),
    polymorphic(
        &["array_replace"],
        (3, 3),
        Returns::Of(the_array),
        ARRAY_ELEMENT_ELEMENT,
        array::array_replace,
    ),
    polymorphic(
        &["array_to_string"],
        (2, 3),
        Returns::Fixed(Type::Text),
        ARRAY_TEXT,
        array::array_to_string,
    ),
    polymorphic(
        &["string_to_array"],
        (2, 3),
        Returns::Of(text_array),
        &[Role::Fixed(Type::Text)],
        array::string_to_array,
    ),
    strict(
        &["arraycontains"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Array(ARRAY_ARRAY),
        array::arraycontains,
    ),
    strict(
        &["arraycontained"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Array(ARRAY_ARRAY),
        array::arraycontained,
    ),
    strict(
        &["arrayoverlap"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Array(ARRAY_ARRAY),
        array::arrayoverlap,
    ),
    // Set-returning functions of a select list (the json ones are `json::FUNCTIONS`).
    polymorphic(&["unnest"], (1, 1), Returns::Of(element_of), ARRAY_ONLY, array::unnest).set(),
    strict(
        &["generate_series"],
        (2, 3),
        Returns::Of(series_type),
        Takes::Of(series_argument),
        math::series,
    )
    .set(),
];

/// `unnest`'s result: the array's element type.
fn element_of(args: &[Type]) -> Type {
    match args.first() {
        Some(Type::Array(elem)) => elem.ty(),
        _ => Type::Text,
    }
}

/// `generate_series`'s result over integers: bigint when an argument is one.
fn series_type(args: &[Type]) -> Type {
    if args.contains(&Type::Int8) { Type::Int8 } else { Type::Int4 }
}

fn series_argument(_: usize, result: Type) -> Type {
    result
}

/// A json function of any number of arguments called with NULLs too.
const fn json_nulls(
    names: &'static [&'static str],
    returns: Returns,
    resolve: fn(&[Type]) -> Option<Vec<Type>>,
    body: fn(&[Value], Type, &Context<'_>) -> SqlResult<Value>,
) -> Function {
    Function {
        names,
        arity: (0, ANY),
        returns,
        takes: Takes::Resolve(resolve),
        volatile: false,
        set: false,
        body: Body::Nulls(body),
    }
}

/// Every function: the table above, then the families that keep their own.
fn all() -> impl Iterator<Item = &'static Function> {
    FUNCTIONS.iter().chain(json::FUNCTIONS)
}

static BY_NAME: LazyLock<HashMap<&'static str, &'static Function>> = LazyLock::new(|| {
    all().flat_map(|function| function.names.iter().map(move |name| (*name, function))).collect()
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
        let names: usize = all().map(|function| function.names.len()).sum();
        assert_eq!(BY_NAME.len(), names, "a name is listed twice");
        for function in all() {
            assert!(function.arity.0 <= function.arity.1, "{}", function.name());
            if let Takes::Positions(types) | Takes::ResultThen(types) = function.takes {
                assert!(!types.is_empty(), "{}", function.name());
            }
            assert!(std::ptr::eq(lookup(function.name()).unwrap(), function));
        }
        assert!(lookup("no_such_function").is_none());
    }
}
