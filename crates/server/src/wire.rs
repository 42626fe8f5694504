//! Values on the wire: PostgreSQL's text and binary formats for every Engram type and type
//! OIDs (sizes and modifiers are `Type::pg_length` and `Type::pg_modifier`).

use bytes::{BufMut, BytesMut};
use engram_sql::types::{Interval, numeric_from_binary, numeric_to_binary, parse_text};
use engram_sql::{Decimal, SqlError, SqlResult, Type, Value};

/// Microseconds and days between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i32 = 10_957;

/// A timestamp's binary form: microseconds since 2000-01-01, infinities as the extremes.
fn pg_micros(micros: i64) -> i64 {
    match micros {
        i64::MAX | i64::MIN => micros,
        micros => micros - PG_EPOCH_MICROS,
    }
}

/// The OID a result column reports (unknown literals are text, as in PostgreSQL).
pub fn result_oid(ty: Type) -> u32 {
    match ty {
        Type::Unknown => Type::Text.oid(),
        other => other.oid(),
    }
}

/// The type a client's parameter OID names (0: let the statement decide).
pub fn param_type(oid: u32) -> SqlResult<Type> {
    Ok(match oid {
        // bpchar without a length, name, and the types Engram reads as their nearest.
        1042 | 19 => Type::Text,
        26 => Type::Int8,
        other => Type::from_oid(other).ok_or_else(|| {
            SqlError::new("42704", format!("type with OID {other} is not supported"))
        })?,
    })
}

/// Appends one field of a DataRow: its length (-1 for NULL) and bytes.
pub fn put_field(out: &mut BytesMut, value: &Value, ty: Type, binary: bool, text: &mut String) {
    if value.is_null() {
        out.put_i32(-1);
        return;
    }
    let at = out.len();
    out.put_i32(0);
    if binary {
        put_binary(out, value, ty);
    } else {
        text.clear();
        value.write_text(ty, text);
        out.put_slice(text.as_bytes());
    }
    let len = (out.len() - at - 4) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn put_numeric(out: &mut BytesMut, value: Decimal) {
    let mut bytes = Vec::with_capacity(16);
    numeric_to_binary(value, &mut bytes);
    out.put_slice(&bytes);
}

fn put_binary(out: &mut BytesMut, value: &Value, ty: Type) {
    match (value, ty) {
        (Value::Bool(b), _) => out.put_u8(u8::from(*b)),
        (Value::Int(i), Type::Int2) => out.put_i16(*i as i16),
        (Value::Int(i), Type::Int4) => out.put_i32(*i as i32),
        (Value::Int(i), Type::Regclass) => out.put_u32(*i as u32),
        (Value::Int(i), Type::Numeric { .. }) => put_numeric(out, Decimal::from(*i)),
        (Value::Int(i), Type::Float8) => out.put_f64(*i as f64),
        (Value::Int(i), _) => out.put_i64(*i),
        (Value::Float(f), Type::Float4) => out.put_f32(*f as f32),
        (Value::Float(f), _) => out.put_f64(*f),
        (Value::Numeric(d), _) => put_numeric(out, *d),
        (Value::Text(_), _) => {
            // Text's binary form is its text (CHAR(n) blank-padded like the text output).
            let mut text = String::new();
            value.write_text(ty, &mut text);
            out.put_slice(text.as_bytes());
        }
        (Value::Bytes(b), _) => out.put_slice(b),
        (Value::Date(d), _) => out.put_i32(d - PG_EPOCH_DAYS),
        (Value::Timestamp(t) | Value::Timestamptz(t), _) => out.put_i64(pg_micros(*t)),
        (Value::Time(t), _) => out.put_i64(*t),
        (Value::Interval(i), _) => {
            out.put_i64(i.micros);
            out.put_i32(i.days);
            out.put_i32(i.months);
        }
        (Value::Uuid(bytes), _) => out.put_slice(bytes),
        (Value::Array(items), _) => put_array(out, items, ty),
        // jsonb's binary form: a version byte (1), then the text.
        (Value::Json(json), _) => {
            out.put_u8(1);
            out.put_slice(json.to_text().as_bytes());
        }
        (Value::Null, _) => {}
    }
}

/// An array's binary form: dimensions (0 for an empty array, else 1), whether an element is
/// NULL, the element type's OID, the dimension's length and lower bound (1), then each element
/// as a field.
fn put_array(out: &mut BytesMut, items: &[Value], ty: Type) {
    let elem = match ty {
        Type::Array(elem) => elem,
        _ => engram_sql::types::Elem::Text,
    };
    let elem_ty = elem.ty();
    out.put_i32(i32::from(!items.is_empty()));
    out.put_i32(i32::from(items.iter().any(Value::is_null)));
    out.put_u32(elem_ty.oid());
    if items.is_empty() {
        return;
    }
    out.put_i32(items.len() as i32);
    out.put_i32(1);
    let mut text = String::new();
    for item in items {
        put_field(out, item, elem_ty, true, &mut text);
    }
}

/// Reads an array parameter's binary form (one dimension, any lower bound).
fn decode_array(bytes: &[u8], elem: engram_sql::types::Elem) -> SqlResult<Value> {
    let wrong = || SqlError::new("22P03", "incorrect binary data format in array parameter");
    let mut at = 0;
    let word = |at: &mut usize| -> SqlResult<i32> {
        let value = bytes.get(*at..*at + 4).ok_or_else(wrong)?;
        *at += 4;
        Ok(i32::from_be_bytes(value.try_into().map_err(|_| wrong())?))
    };
    let dimensions = word(&mut at)?;
    let _has_null = word(&mut at)?;
    let _elem_oid = word(&mut at)?;
    match dimensions {
        0 => return Ok(engram_sql::types::array(Vec::new())),
        1 => {}
        _ => return Err(SqlError::unsupported("multidimensional arrays")),
    }
    let count = word(&mut at)?;
    let _lower = word(&mut at)?;
    if count < 0 || count as usize > engram_sql::types::ARRAY_ELEMENTS_MAX {
        return Err(wrong());
    }
    let mut items = Vec::with_capacity((count as usize).min(bytes.len() / 4));
    for _ in 0..count {
        let len = word(&mut at)?;
        if len < 0 {
            items.push(Value::Null);
            continue;
        }
        let item = bytes.get(at..at + len as usize).ok_or_else(wrong)?;
        at += len as usize;
        items.push(decode_param(Some(item), elem.ty(), true)?);
    }
    if at != bytes.len() {
        return Err(wrong());
    }
    Ok(engram_sql::types::array(items))
}

/// Decodes a Bind parameter (`None` is NULL) of type `ty` in text or binary format.
pub fn decode_param(bytes: Option<&[u8]>, ty: Type, binary: bool) -> SqlResult<Value> {
    let Some(bytes) = bytes else { return Ok(Value::Null) };
    if !binary {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\""))?;
        return match ty {
            Type::Unknown => Ok(Value::Text(text.into())),
            ty => parse_text(text, ty),
        };
    }
    let wrong = || {
        SqlError::new(
            "22P03",
            format!("incorrect binary data format in bind parameter of type {}", ty.name()),
        )
    };
    let fixed =
        |n: usize| -> SqlResult<&[u8]> { if bytes.len() == n { Ok(bytes) } else { Err(wrong()) } };
    Ok(match ty {
        Type::Bool => Value::Bool(fixed(1)?[0] != 0),
        Type::Int2 => {
            Value::Int(i64::from(i16::from_be_bytes(fixed(2)?.try_into().map_err(|_| wrong())?)))
        }
        Type::Int4 => {
            Value::Int(i64::from(i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| wrong())?)))
        }
        Type::Int8 => Value::Int(i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| wrong())?)),
        Type::Regclass => {
            Value::Int(i64::from(u32::from_be_bytes(fixed(4)?.try_into().map_err(|_| wrong())?)))
        }
        Type::Float4 => {
            Value::Float(f64::from(f32::from_be_bytes(fixed(4)?.try_into().map_err(|_| wrong())?)))
        }
        Type::Float8 => {
            Value::Float(f64::from_be_bytes(fixed(8)?.try_into().map_err(|_| wrong())?))
        }
        Type::Numeric { .. } => Value::Numeric(numeric_from_binary(bytes).ok_or_else(wrong)?),
        Type::Date => Value::Date(
            i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| wrong())?) + PG_EPOCH_DAYS,
        ),
        Type::Timestamp | Type::Timestamptz => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| wrong())?);
            let micros = match micros {
                i64::MAX | i64::MIN => micros,
                micros => micros.checked_add(PG_EPOCH_MICROS).ok_or_else(wrong)?,
            };
            if ty == Type::Timestamp {
                Value::Timestamp(micros)
            } else {
                Value::Timestamptz(micros)
            }
        }
        Type::Time => Value::Time(i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| wrong())?)),
        Type::Interval => {
            let bytes = fixed(16)?;
            Value::Interval(Interval::new(
                i32::from_be_bytes(bytes[12..16].try_into().map_err(|_| wrong())?),
                i32::from_be_bytes(bytes[8..12].try_into().map_err(|_| wrong())?),
                i64::from_be_bytes(bytes[..8].try_into().map_err(|_| wrong())?),
            ))
        }
        Type::Uuid => Value::Uuid(fixed(16)?.try_into().map_err(|_| wrong())?),
        Type::Bytea => Value::Bytes(bytes.to_vec()),
        Type::Array(elem) => decode_array(bytes, elem)?,
        Type::Json | Type::Jsonb => {
            let body = match (ty, bytes.split_first()) {
                (Type::Jsonb, Some((1, body))) => body,
                (Type::Jsonb, _) => {
                    return Err(SqlError::new("22P03", "unsupported jsonb version number"));
                }
                _ => bytes,
            };
            let text = std::str::from_utf8(body).map_err(|_| {
                SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\"")
            })?;
            parse_text(text, ty)?
        }
        Type::Char(_) | Type::Varchar(_) | Type::Text | Type::Unknown => {
            let text = std::str::from_utf8(bytes).map_err(|_| {
                SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\"")
            })?;
            match ty {
                Type::Unknown | Type::Text => Value::Text(text.into()),
                ty => parse_text(text, ty)?,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(value: &Value, ty: Type) -> Vec<u8> {
        let mut out = BytesMut::new();
        put_field(&mut out, value, ty, true, &mut String::new());
        out[4..].to_vec()
    }

    #[test]
    fn numeric_binary_round_trips() {
        for text in
            ["0", "1", "-1", "12345.6789", "0.0001", "-0.50", "10000", "99999999.99", "3.14159"]
        {
            let value: Decimal = text.parse().unwrap();
            let bytes = binary(&Value::Numeric(value), Type::Numeric { precision: 0, scale: 0 });
            let back = numeric_from_binary(&bytes).unwrap();
            assert_eq!(back, value, "{text}");
            assert_eq!(back.to_string(), value.to_string(), "{text}: display scale kept");
        }
        // PostgreSQL's own encoding of 12345.6789: 3 digits, weight 1, scale 4: 1 2345 6789.
        let bytes = binary(
            &Value::Numeric("12345.6789".parse().unwrap()),
            Type::Numeric { precision: 0, scale: 0 },
        );
        assert_eq!(bytes, vec![0, 3, 0, 1, 0, 0, 0, 4, 0, 1, 0x09, 0x29, 0x1a, 0x85]);
    }

    #[test]
    fn arrays_round_trip_in_binary() {
        use engram_sql::types::{Elem, array};
        let ty = Type::Array(Elem::Int4);
        let value = array(vec![Value::Int(1), Value::Null, Value::Int(-3)]);
        let bytes = binary(&value, ty);
        // One dimension, a NULL among the elements, int4 elements, 3 of them from 1.
        assert_eq!(&bytes[..20], &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 3, 0, 0, 0, 1]);
        let back = decode_param(Some(&bytes), ty, true).unwrap();
        assert_eq!(back.compare(&value), std::cmp::Ordering::Equal);
        let empty = binary(&array(Vec::new()), Type::Array(Elem::Text));
        assert_eq!(empty, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25]);
        let text = decode_param(Some(b"{a,\"b c\",NULL}"), Type::Array(Elem::Text), false);
        assert_eq!(text.unwrap().to_text(Type::Array(Elem::Text)).unwrap(), "{a,\"b c\",NULL}");
        assert_eq!(param_type(1009).unwrap(), Type::Array(Elem::Text));
        assert_eq!(decode_param(Some(&bytes[..10]), ty, true).unwrap_err().code, "22P03");
    }

    #[test]
    fn params_decode_in_both_formats() {
        let same = |a: Value, b: Value| a.compare(&b) == std::cmp::Ordering::Equal;
        assert!(same(decode_param(Some(b"42"), Type::Int4, false).unwrap(), Value::Int(42)));
        assert!(same(
            decode_param(Some(&42i32.to_be_bytes()), Type::Int4, true).unwrap(),
            Value::Int(42)
        ));
        assert!(decode_param(None, Type::Int4, true).unwrap().is_null());
        assert_eq!(decode_param(Some(&[0, 1]), Type::Int4, true).unwrap_err().code, "22P03");
        assert_eq!(decode_param(Some(b"x"), Type::Int4, false).unwrap_err().code, "22P02");
        let ts = decode_param(Some(&0i64.to_be_bytes()), Type::Timestamp, true).unwrap();
        assert!(same(ts.clone(), Value::Timestamp(PG_EPOCH_MICROS)));
        assert_eq!(binary(&ts, Type::Timestamp), 0i64.to_be_bytes());
    }

    /// The binary forms drivers send and read (PostgreSQL's `timestamptz_send`, `time_send`,
    /// `interval_send`, `uuid_send`) decode to the values they encode from.
    #[test]
    fn date_time_and_uuid_binary_round_trip() {
        let interval = Value::Interval(Interval::new(14, -3, 3_600_000_001));
        let bytes = binary(&interval, Type::Interval);
        // Microseconds, then days, then months, big-endian.
        assert_eq!(&bytes[..8], &3_600_000_001i64.to_be_bytes());
        assert_eq!(&bytes[8..12], &(-3i32).to_be_bytes());
        assert_eq!(&bytes[12..], &14i32.to_be_bytes());
        let cases = [
            (interval, Type::Interval),
            (Value::Timestamptz(PG_EPOCH_MICROS + 1), Type::Timestamptz),
            (Value::Timestamptz(i64::MAX), Type::Timestamptz),
            (Value::Time(86_399_999_999), Type::Time),
            (Value::Uuid(*b"0123456789abcdef"), Type::Uuid),
        ];
        for (value, ty) in cases {
            let back = decode_param(Some(&binary(&value, ty)), ty, true).unwrap();
            assert_eq!(format!("{back:?}"), format!("{value:?}"), "{ty:?}");
        }
        assert_eq!(binary(&Value::Timestamptz(PG_EPOCH_MICROS), Type::Timestamptz), [0; 8]);
        assert_eq!(decode_param(Some(&[0; 15]), Type::Uuid, true).unwrap_err().code, "22P03");
        assert_eq!(param_type(1184).unwrap(), Type::Timestamptz);
        assert_eq!(param_type(2950).unwrap(), Type::Uuid);
    }

    /// jsonb's binary form is a version byte (1) and the text; json's is the text.
    #[test]
    fn json_binary_forms() {
        let jsonb = decode_param(Some(b"\x01{\"b\": 1, \"a\": [2]}"), Type::Jsonb, true).unwrap();
        assert_eq!(binary(&jsonb, Type::Jsonb), b"\x01{\"a\": [2], \"b\": 1}");
        assert_eq!(decode_param(Some(b"\x02{}"), Type::Jsonb, true).unwrap_err().code, "22P03");
        assert_eq!(decode_param(Some(b"\x01{"), Type::Jsonb, true).unwrap_err().code, "22P02");
        let json = decode_param(Some(b"{\"b\": 1,  \"b\": 2}"), Type::Json, true).unwrap();
        assert_eq!(binary(&json, Type::Json), b"{\"b\": 1,  \"b\": 2}");
        assert_eq!(decode_param(Some(b"[1,"), Type::Json, false).unwrap_err().code, "22P02");
        assert_eq!(
            (param_type(114).unwrap(), param_type(3802).unwrap()),
            (Type::Json, Type::Jsonb)
        );
    }
}
