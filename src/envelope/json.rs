//! The raw document: a JSON tree that keeps duplicate keys and their order, so
//! validation can refuse a duplicate instead of letting one copy silently win, and
//! the comment convention every block of an envelope follows.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Parses `bytes` into a JSON object's entries, or says why it is not one.
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Vec<(String, Json)>, String> {
    match serde_json::from_slice::<Json>(bytes) {
        Err(e) => Err(format!("not a JSON object: {e}")),
        Ok(Json::Obj(entries)) => Ok(entries),
        Ok(other) => Err(format!("not a JSON object: got {}", other.type_name())),
    }
}

/// A JSON value that keeps every object entry, duplicates included, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(Num),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    /// Above `i64::MAX`: valid JSON, but no Go `int` holds it.
    BigUint(u64),
    Float(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::BigUint(u) => write!(f, "{u}"),
            Num::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Json {
    /// The JSON type name, as error messages spell it.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Num(_) => "number",
            Json::Str(_) => "string",
            Json::Arr(_) => "array",
            Json::Obj(_) => "object",
        }
    }

    pub(crate) fn as_obj(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Obj(entries) => Some(entries),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(Num::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(match i64::try_from(v) {
            Ok(i) => Num::Int(i),
            Err(_) => Num::BigUint(v),
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Num(Num::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Obj(entries))
    }
}

/// The comment convention: `//…` keys (and `$schema`) carry notes, never data.
pub(crate) fn is_annotation_key(key: &str) -> bool {
    key.starts_with("//") || key == "$schema"
}
