//! How a [`Value`] crosses to PostgreSQL and back: bound to whatever type the
//! server inferred for its placeholder, and read from any column type.

use std::error::Error as StdError;

use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::value::Value;

type BoxError = Box<dyn StdError + Sync + Send>;

/// A parameter takes whatever type PostgreSQL inferred for its placeholder: an
/// integer binds to a BIGINT, INTEGER or SMALLINT column (range-checked), a flag
/// to a BOOLEAN, any value to TEXT — so one statement serves both backends.
impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut bytes_mut::BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(n) => match *ty {
                Type::INT8 => n.to_sql(ty, out),
                Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
                Type::BOOL => (*n != 0).to_sql(ty, out),
                Type::FLOAT8 => (*n as f64).to_sql(ty, out),
                Type::FLOAT4 => (*n as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR | Type::UNKNOWN => {
                    n.to_string().as_str().to_sql(&Type::TEXT, out)
                }
                ref other => Err(format!("an integer cannot bind to a {other} parameter").into()),
            },
            Value::Real(x) => match *ty {
                Type::FLOAT8 => x.to_sql(ty, out),
                Type::FLOAT4 => (*x as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR | Type::UNKNOWN => {
                    x.to_string().as_str().to_sql(&Type::TEXT, out)
                }
                ref other => Err(format!("a real cannot bind to a {other} parameter").into()),
            },
            Value::Text(s) => match *ty {
                Type::BYTEA => s.as_bytes().to_sql(ty, out),
                Type::INT8 | Type::INT4 | Type::INT2 | Type::BOOL | Type::FLOAT8 => {
                    Err(format!("text cannot bind to a {ty} parameter").into())
                }
                _ => s.as_str().to_sql(&Type::TEXT, out),
            },
            Value::Blob(b) => match *ty {
                Type::BYTEA => b.as_slice().to_sql(ty, out),
                ref other => Err(format!("a blob cannot bind to a {other} parameter").into()),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Any column reads as a [`Value`]; integer widths and booleans all become `Int`.
impl<'a> tokio_postgres::types::FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Value, BoxError> {
        use tokio_postgres::types::FromSql as F;
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::OID => Value::Int(u32::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::NUMERIC => numeric(raw)?,
            Type::BYTEA => Value::Blob(<Vec<u8> as F>::from_sql(ty, raw)?),
            Type::JSONB => {
                Value::Text(std::str::from_utf8(raw.get(1..).unwrap_or_default())?.to_string())
            }
            Type::JSON => Value::Text(std::str::from_utf8(raw)?.to_string()),
            _ => Value::Text(<String as F>::from_sql(&Type::TEXT, raw)?),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Value, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// NUMERIC's binary form (what SUM and AVG of integers return): an integer when it
/// has no fraction, a real otherwise.
fn numeric(raw: &[u8]) -> Result<Value, BoxError> {
    let word = |i: usize| -> Result<i16, BoxError> {
        raw.get(i..i + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a truncated NUMERIC".into())
    };
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i32;
    let sign = word(4)? as u16;
    if sign == 0xC000 {
        return Ok(Value::Real(f64::NAN));
    }
    let mut int: i128 = 0;
    let mut real = 0f64;
    let mut fractional = false;
    for d in 0..ndigits {
        let digit = word(8 + 2 * d)? as i128;
        let power = weight - d as i32;
        real += digit as f64 * 10000f64.powi(power);
        if power >= 0 {
            int = int * 10000 + digit;
        } else if digit != 0 {
            fractional = true;
        }
    }
    // Trailing zero groups are omitted from the digits: scale the integer up.
    let last_power = weight - ndigits as i32 + 1;
    for _ in 0..last_power.max(0) {
        int *= 10000;
    }
    let negative = sign == 0x4000;
    if fractional {
        return Ok(Value::Real(if negative { -real } else { real }));
    }
    let int = if negative { -int } else { int };
    Ok(Value::Int(i64::try_from(int)?))
}

mod bytes_mut {
    pub use tokio_postgres::types::private::BytesMut;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_decode_to_integers_or_reals() {
        // 123456789 = digits [1, 2345, 6789], weight 2, positive, scale 0.
        let raw = [0, 3, 0, 2, 0, 0, 0, 0, 0, 1, 0x09, 0x29, 0x1a, 0x85];
        assert_eq!(numeric(&raw).unwrap(), Value::Int(123_456_789));
        // 20000 = digits [2], weight 1 (the trailing 0000 group omitted).
        let raw = [0, 1, 0, 1, 0, 0, 0, 0, 0, 2];
        assert_eq!(numeric(&raw).unwrap(), Value::Int(20000));
        // -1.5 = digits [1, 5000], weight 0, negative, scale 1.
        let raw = [0, 2, 0, 0, 0x40, 0, 0, 1, 0, 1, 0x13, 0x88];
        assert_eq!(numeric(&raw).unwrap(), Value::Real(-1.5));
        // 0 = no digits.
        let raw = [0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(numeric(&raw).unwrap(), Value::Int(0));
    }
}
