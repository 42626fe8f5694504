//! Expressions: sqlparser's expression tree into Engram's, with the SQL forms that stand for a
//! function (`SUBSTRING(... FROM ...)`, `TRIM(... FROM ...)`, `EXTRACT`, `POSITION`, `^`, ...)
//! written as calls of the registry's functions.

use super::*;

fn boxed(expr: sp::Expr) -> SqlResult<Box<Expr>> {
    Ok(Box::new(expr_from(expr)?))
}

/// Converts an expression.
pub fn expr_from(expr: sp::Expr) -> SqlResult<Expr> {
    depth::grow(|| expr_node(expr))
}

fn expr_node(expr: sp::Expr) -> SqlResult<Expr> {
    use sp::Expr as E;
    Ok(match expr {
        E::Identifier(id) => {
            if id.quote_style.is_none() {
                let lower = id.value.to_lowercase();
                match lower.as_str() {
                    "current_timestamp" => return Ok(call("now", vec![])),
                    "localtimestamp" => return Ok(call("localtimestamp", vec![])),
                    "localtime" => return Ok(call("localtime", vec![])),
                    "current_date" => {
                        return Ok(call("current_date", vec![]));
                    }
                    "default" => return Ok(Expr::Default),
                    _ => {}
                }
            }
            Expr::Column { table: None, name: ident(&id) }
        }
        E::CompoundIdentifier(ids) => match ids.as_slice() {
            [table, column] => Expr::Column { table: Some(ident(table)), name: ident(column) },
            [schema, table, column]
                if matches!(
                    ident(schema).as_str(),
                    "public" | "pg_catalog" | "information_schema"
                ) =>
            {
                Expr::Column { table: Some(ident(table)), name: ident(column) }
            }
            _ => {
                return Err(SqlError::unsupported(format!(
                    "the name {}",
                    E::CompoundIdentifier(ids)
                )));
            }
        },
        E::Value(value) => match value.value {
            sp::Value::Number(text, _) => Expr::Literal(Literal::Number(text)),
            sp::Value::SingleQuotedString(s)
            | sp::Value::EscapedStringLiteral(s)
            | sp::Value::DollarQuotedString(sp::DollarQuotedString { value: s, .. }) => {
                Expr::Literal(Literal::String(s))
            }
            sp::Value::Boolean(b) => Expr::Literal(Literal::Bool(b)),
            sp::Value::Null => Expr::Literal(Literal::Null),
            sp::Value::Placeholder(text) => {
                let number = text
                    .strip_prefix('$')
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| (1..=65_535).contains(n))
                    .ok_or_else(|| SqlError::syntax(format!("invalid parameter {text}")))?;
                Expr::Param(number)
            }
            other => return Err(SqlError::unsupported(format!("the literal {other}"))),
        },
        E::TypedString(typed) => {
            let ty = type_from(&typed.data_type)?;
            let text = match typed.value.value {
                sp::Value::SingleQuotedString(s) => s,
                other => return Err(SqlError::unsupported(format!("the literal {other}"))),
            };
            Expr::Cast { expr: Box::new(Expr::Literal(Literal::String(text))), ty }
        }
        E::Interval(interval) => {
            let text = match *interval.value {
                E::Value(sp::ValueWithSpan {
                    value: sp::Value::SingleQuotedString(s) | sp::Value::Number(s, _),
                    ..
                }) => s,
                other => return Err(SqlError::unsupported(format!("the interval {other}"))),
            };
            // A bare number counts the last field written: `INTERVAL '3' DAY` is three days.
            let unit = interval.last_field.or(interval.leading_field);
            let bare = text.trim().parse::<f64>().is_ok();
            let text = match unit {
                Some(field) if bare => format!("{text} {}", field.to_string().to_lowercase()),
                _ => text,
            };
            Expr::Cast { expr: Box::new(Expr::Literal(Literal::String(text))), ty: Type::Interval }
        }
        E::AtTimeZone { timestamp, time_zone } => {
            call("timezone", vec![expr_from(*time_zone)?, expr_from(*timestamp)?])
        }
        E::Nested(inner) => expr_from(*inner)?,
        E::UnaryOp { op, expr } => match op {
            sp::UnaryOperator::Minus => match *expr {
                E::Value(sp::ValueWithSpan { value: sp::Value::Number(text, _), .. }) => {
                    Expr::Literal(Literal::Number(format!("-{text}")))
                }
                other => Expr::Negate(boxed(other)?),
            },
            sp::UnaryOperator::Plus => expr_from(*expr)?,
            sp::UnaryOperator::Not => Expr::Not(boxed(*expr)?),
            other => return Err(SqlError::unsupported(format!("the operator {other}"))),
        },
        E::BinaryOp { left, op, right } => {
            let op = match op {
                sp::BinaryOperator::Plus => BinaryOp::Add,
                sp::BinaryOperator::Minus => BinaryOp::Subtract,
                sp::BinaryOperator::Multiply => BinaryOp::Multiply,
                sp::BinaryOperator::Divide => BinaryOp::Divide,
                sp::BinaryOperator::Modulo => BinaryOp::Modulo,
                sp::BinaryOperator::StringConcat => BinaryOp::Concat,
                sp::BinaryOperator::Eq => BinaryOp::Eq,
                sp::BinaryOperator::NotEq => BinaryOp::NotEq,
                sp::BinaryOperator::Lt => BinaryOp::Lt,
                sp::BinaryOperator::LtEq => BinaryOp::LtEq,
                sp::BinaryOperator::Gt => BinaryOp::Gt,
                sp::BinaryOperator::GtEq => BinaryOp::GtEq,
                sp::BinaryOperator::And => BinaryOp::And,
                sp::BinaryOperator::Or => BinaryOp::Or,
                // `a ~ b` and its case-insensitive and negated forms: regular expressions.
                sp::BinaryOperator::PGRegexMatch
                | sp::BinaryOperator::PGRegexIMatch
                | sp::BinaryOperator::PGRegexNotMatch
                | sp::BinaryOperator::PGRegexNotIMatch => {
                    let insensitive = matches!(
                        op,
                        sp::BinaryOperator::PGRegexIMatch | sp::BinaryOperator::PGRegexNotIMatch
                    );
                    let negated = matches!(
                        op,
                        sp::BinaryOperator::PGRegexNotMatch | sp::BinaryOperator::PGRegexNotIMatch
                    );
                    let mut args = vec![expr_from(*left)?, expr_from(*right)?];
                    if insensitive {
                        args.push(Expr::Literal(Literal::String("i".into())));
                    }
                    let matched = call("regexp_like", args);
                    return Ok(if negated { Expr::Not(Box::new(matched)) } else { matched });
                }
                // Array containment and overlap, by their function names.
                sp::BinaryOperator::AtArrow
                | sp::BinaryOperator::ArrowAt
                | sp::BinaryOperator::PGOverlap => {
                    let name = match op {
                        sp::BinaryOperator::AtArrow => "arraycontains",
                        sp::BinaryOperator::ArrowAt => "arraycontained",
                        _ => "arrayoverlap",
                    };
                    return Ok(call(name, vec![expr_from(*left)?, expr_from(*right)?]));
                }
                // The json operators, by the functions behind them (`expr/functions/json.rs`).
                sp::BinaryOperator::Arrow
                | sp::BinaryOperator::LongArrow
                | sp::BinaryOperator::HashArrow
                | sp::BinaryOperator::HashLongArrow
                | sp::BinaryOperator::HashMinus
                | sp::BinaryOperator::Question
                | sp::BinaryOperator::QuestionAnd
                | sp::BinaryOperator::QuestionPipe => {
                    let name = match op {
                        sp::BinaryOperator::Arrow => "json_arrow",
                        sp::BinaryOperator::LongArrow => "json_arrow_text",
                        sp::BinaryOperator::HashArrow => "json_path_op",
                        sp::BinaryOperator::HashLongArrow => "json_path_text_op",
                        sp::BinaryOperator::HashMinus => "jsonb_delete_path",
                        sp::BinaryOperator::Question => "jsonb_exists",
                        sp::BinaryOperator::QuestionAnd => "jsonb_exists_all",
                        _ => "jsonb_exists_any",
                    };
                    return Ok(call(name, vec![expr_from(*left)?, expr_from(*right)?]));
                }
                // `a ^ b`: PostgreSQL's exponentiation, in double precision.
                sp::BinaryOperator::PGExp => {
                    return Ok(call("power", vec![expr_from(*left)?, expr_from(*right)?]));
                }
                other => return Err(SqlError::unsupported(format!("the operator {other}"))),
            };
            Expr::Binary { op, left: boxed(*left)?, right: boxed(*right)? }
        }
        E::IsDistinctFrom(left, right) => Expr::Binary {
            op: BinaryOp::IsDistinctFrom,
            left: boxed(*left)?,
            right: boxed(*right)?,
        },
        E::IsNotDistinctFrom(left, right) => Expr::Binary {
            op: BinaryOp::IsNotDistinctFrom,
            left: boxed(*left)?,
            right: boxed(*right)?,
        },
        E::IsNull(inner) => Expr::IsNull { expr: boxed(*inner)?, negated: false },
        E::IsNotNull(inner) => Expr::IsNull { expr: boxed(*inner)?, negated: true },
        E::IsTrue(inner) => Expr::IsBool { expr: boxed(*inner)?, value: true, negated: false },
        E::IsNotTrue(inner) => Expr::IsBool { expr: boxed(*inner)?, value: true, negated: true },
        E::IsFalse(inner) => Expr::IsBool { expr: boxed(*inner)?, value: false, negated: false },
        E::IsNotFalse(inner) => Expr::IsBool { expr: boxed(*inner)?, value: false, negated: true },
        E::InList { expr, list, negated } => Expr::InList {
            expr: boxed(*expr)?,
            list: list.into_iter().map(expr_from).collect::<SqlResult<_>>()?,
            negated,
        },
        E::InSubquery { expr, subquery, negated } => Expr::InSubquery {
            expr: boxed(*expr)?,
            query: Box::new(query_from(*subquery)?),
            negated,
        },
        E::Exists { subquery, negated } => {
            Expr::Exists { query: Box::new(query_from(*subquery)?), negated }
        }
        E::Subquery(query) => Expr::Subquery(Box::new(query_from(*query)?)),
        E::Between { expr, negated, low, high } => {
            Expr::Between { expr: boxed(*expr)?, low: boxed(*low)?, high: boxed(*high)?, negated }
        }
        E::Like { negated, any: false, expr, pattern, escape_char: None } => Expr::Like {
            expr: boxed(*expr)?,
            pattern: boxed(*pattern)?,
            negated,
            case_insensitive: false,
        },
        E::ILike { negated, any: false, expr, pattern, escape_char: None } => Expr::Like {
            expr: boxed(*expr)?,
            pattern: boxed(*pattern)?,
            negated,
            case_insensitive: true,
        },
        E::Cast {
            kind: sp::CastKind::Cast | sp::CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
        } => Expr::Cast { expr: boxed(*expr)?, ty: type_from(&data_type)? },
        E::Substring { expr, substring_from, substring_for, .. } => {
            let mut args = vec![expr_from(*expr)?];
            args.push(match substring_from {
                Some(from) => expr_from(*from)?,
                None => Expr::Literal(Literal::Number("1".into())),
            });
            if let Some(length) = substring_for {
                args.push(expr_from(*length)?);
            }
            call("substr", args)
        }
        E::Trim { trim_where, trim_what, expr, trim_characters } => {
            let name = match trim_where {
                Some(sp::TrimWhereField::Leading) => "ltrim",
                Some(sp::TrimWhereField::Trailing) => "rtrim",
                Some(sp::TrimWhereField::Both) | None => "btrim",
            };
            let mut args = vec![expr_from(*expr)?];
            if let Some(what) = trim_what {
                args.push(expr_from(*what)?);
            }
            for characters in trim_characters.into_iter().flatten() {
                args.push(expr_from(characters)?);
            }
            call(name, args)
        }
        E::Floor {
            expr,
            field: sp::CeilFloorKind::DateTimeField(sp::DateTimeField::NoDateTime),
        } => call("floor", vec![expr_from(*expr)?]),
        E::Ceil {
            expr,
            field: sp::CeilFloorKind::DateTimeField(sp::DateTimeField::NoDateTime),
        } => call("ceil", vec![expr_from(*expr)?]),
        E::Extract { field, expr, .. } => call(
            "extract",
            vec![
                Expr::Literal(Literal::String(field.to_string().to_lowercase())),
                expr_from(*expr)?,
            ],
        ),
        E::Position { expr, r#in } => call("strpos", vec![expr_from(*r#in)?, expr_from(*expr)?]),
        E::Case { operand, conditions, else_result, .. } => Expr::Case {
            operand: operand.map(|o| boxed(*o)).transpose()?,
            whens: conditions
                .into_iter()
                .map(|when| Ok((expr_from(when.condition)?, expr_from(when.result)?)))
                .collect::<SqlResult<_>>()?,
            otherwise: else_result.map(|e| boxed(*e)).transpose()?,
        },
        E::Function(function) => function_from(function)?,
        E::Array(sp::Array { elem, .. }) => {
            Expr::Array(elem.into_iter().map(expr_from).collect::<SqlResult<_>>()?)
        }
        E::AnyOp { left, compare_op, right, .. } => any_all(*left, compare_op, *right, false)?,
        E::AllOp { left, compare_op, right } => any_all(*left, compare_op, *right, true)?,
        E::CompoundFieldAccess { root, access_chain } => {
            let mut expr = expr_from(*root)?;
            for access in access_chain {
                match access {
                    sp::AccessExpr::Subscript(sp::Subscript::Index { index }) => {
                        expr = Expr::Subscript {
                            array: Box::new(expr),
                            index: Box::new(expr_from(index)?),
                        };
                    }
                    other => {
                        return Err(SqlError::unsupported(format!("the array access {other}")));
                    }
                }
            }
            expr
        }
        other => return Err(SqlError::unsupported(format!("the expression {other}"))),
    })
}

/// `left op ANY (right)` or `ALL`: over an array, or over a subquery's rows (`= ANY` is IN,
/// `<> ALL` NOT IN).
fn any_all(left: sp::Expr, op: sp::BinaryOperator, right: sp::Expr, all: bool) -> SqlResult<Expr> {
    let op = match op {
        sp::BinaryOperator::Eq => BinaryOp::Eq,
        sp::BinaryOperator::NotEq => BinaryOp::NotEq,
        sp::BinaryOperator::Lt => BinaryOp::Lt,
        sp::BinaryOperator::LtEq => BinaryOp::LtEq,
        sp::BinaryOperator::Gt => BinaryOp::Gt,
        sp::BinaryOperator::GtEq => BinaryOp::GtEq,
        other => {
            return Err(SqlError::unsupported(format!("the operator {other} with ANY or ALL")));
        }
    };
    let word = if all { "ALL" } else { "ANY" };
    if let sp::Expr::Subquery(query) = right {
        return match (op, all) {
            (BinaryOp::Eq, false) | (BinaryOp::NotEq, true) => Ok(Expr::InSubquery {
                expr: Box::new(expr_from(left)?),
                query: Box::new(super::query_from(*query)?),
                negated: all,
            }),
            _ => Err(SqlError::unsupported(format!("{} {word} (subquery)", op.symbol()))),
        };
    }
    Ok(Expr::AnyAll {
        expr: Box::new(expr_from(left)?),
        op,
        array: Box::new(expr_from(right)?),
        all,
    })
}

fn function_from(mut function: sp::Function) -> SqlResult<Expr> {
    if !function.within_group.is_empty() {
        return Err(SqlError::unsupported("WITHIN GROUP"));
    }
    let over = function.over.take();
    let filter = function.filter.take();
    // An aggregate's ORDER BY, taken out of the argument list.
    let mut order = Vec::new();
    if let sp::FunctionArguments::List(list) = &mut function.args {
        for clause in std::mem::take(&mut list.clauses) {
            match clause {
                sp::FunctionArgumentClause::OrderBy(items) => {
                    for item in items {
                        order.push(order_item_from(item)?);
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "{other} in the call of {}",
                        function.name
                    )));
                }
            }
        }
    }
    if over.is_some() && !order.is_empty() {
        return Err(SqlError::unsupported("ORDER BY in the arguments of a window function"));
    }
    if over.is_none() && filter.is_none() && order.is_empty() {
        return plain_function_from(function);
    }
    let window = match over {
        None => None,
        Some(sp::WindowType::NamedWindow(name)) => {
            return Err(SqlError::new("42704", format!("window \"{name}\" does not exist")));
        }
        Some(sp::WindowType::WindowSpec(spec)) => Some(Box::new(window_from(spec)?)),
    };
    Ok(Expr::Over {
        function: Box::new(plain_function_from(function)?),
        filter: filter.map(|f| expr_from(*f)).transpose()?.map(Box::new),
        window,
        order,
    })
}

/// A window's definition (`OVER (...)` or `WINDOW name AS (...)`).
pub(super) fn window_from(spec: sp::WindowSpec) -> SqlResult<WindowSpec> {
    if spec.window_name.is_some() {
        return Err(SqlError::unsupported("a window that extends a named window"));
    }
    let partition = spec.partition_by.into_iter().map(expr_from).collect::<SqlResult<_>>()?;
    let order = spec.order_by.into_iter().map(order_item_from).collect::<SqlResult<_>>()?;
    let frame = match spec.window_frame {
        None => None,
        Some(frame) => {
            let bound = |bound: sp::WindowFrameBound, start: bool| -> SqlResult<FrameBound> {
                Ok(match bound {
                    sp::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
                    sp::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
                    sp::WindowFrameBound::Preceding(Some(e)) => {
                        FrameBound::Preceding(expr_from(*e)?)
                    }
                    sp::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
                    sp::WindowFrameBound::Following(Some(e)) => {
                        FrameBound::Following(expr_from(*e)?)
                    }
                })
                .and_then(|b| match (&b, start) {
                    (FrameBound::UnboundedFollowing, true) => {
                        Err(SqlError::new("42P20", "frame start cannot be UNBOUNDED FOLLOWING"))
                    }
                    (FrameBound::UnboundedPreceding, false) => {
                        Err(SqlError::new("42P20", "frame end cannot be UNBOUNDED PRECEDING"))
                    }
                    _ => Ok(b),
                })
            };
            Some(Frame {
                units: match frame.units {
                    sp::WindowFrameUnits::Rows => FrameUnits::Rows,
                    sp::WindowFrameUnits::Range => FrameUnits::Range,
                    sp::WindowFrameUnits::Groups => FrameUnits::Groups,
                },
                start: bound(frame.start_bound, true)?,
                end: match frame.end_bound {
                    None => FrameBound::CurrentRow,
                    Some(end) => bound(end, false)?,
                },
            })
        }
    };
    Ok(WindowSpec { partition, order, frame })
}

fn plain_function_from(function: sp::Function) -> SqlResult<Expr> {
    let name = match function.name.0.as_slice() {
        [sp::ObjectNamePart::Identifier(id)] => ident(id),
        [sp::ObjectNamePart::Identifier(schema), sp::ObjectNamePart::Identifier(id)]
            if ident(schema) == "pg_catalog" =>
        {
            ident(id)
        }
        _ => return Err(SqlError::unsupported(format!("the function {}", function.name))),
    };
    let mut distinct = false;
    let mut star = false;
    let mut args = Vec::new();
    match function.args {
        sp::FunctionArguments::None => {}
        sp::FunctionArguments::Subquery(query) if name == "array" => {
            return Ok(Expr::ArraySubquery(Box::new(super::query_from(*query)?)));
        }
        sp::FunctionArguments::Subquery(_) => {
            return Err(SqlError::unsupported("a subquery as function arguments"));
        }
        sp::FunctionArguments::List(list) => {
            distinct = matches!(list.duplicate_treatment, Some(sp::DuplicateTreatment::Distinct));
            if !list.clauses.is_empty() {
                return Err(SqlError::unsupported(format!("clauses in the call of {name}")));
            }
            for arg in list.args {
                match arg {
                    sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Expr(expr)) => {
                        args.push(expr_from(expr)?)
                    }
                    sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Wildcard) => star = true,
                    other => return Err(SqlError::unsupported(format!("the argument {other}"))),
                }
            }
        }
    }
    Ok(Expr::Function { name, args, distinct, star })
}

/// A call of the scalar function `name`, as the SQL syntax that stands for one is written.
fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function { name: name.into(), args, distinct: false, star: false }
}
