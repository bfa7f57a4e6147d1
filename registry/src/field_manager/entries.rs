//! `metadata.managedFields` as upstream encodes it (metav1.ManagedFieldsEntry): one entry per
//! manager identifier, the identifier being the entry without its fields and time (and, for
//! appliers, without its apiVersion, so an applier stays one manager across versions).

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use structured_merge::fieldsv1;
use structured_merge::{ManagedFields, VersionedSet};

pub const APPLY: &str = "Apply";
pub const UPDATE: &str = "Update";
const FIELDS_V1: &str = "FieldsV1";

/// Every manager's fields and the time each last changed something, by manager identifier.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Managed {
    pub fields: ManagedFields,
    pub times: BTreeMap<String, String>,
}

impl Managed {
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// Who wrote, as upstream's identifier names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagerInfo {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub subresource: String,
}

impl ManagerInfo {
    /// The identifier: the JSON of the entry's manager, operation, apiVersion (not for
    /// appliers) and subresource, in metav1.ManagedFieldsEntry's field order, empty ones left
    /// out as Go's omitempty leaves them.
    pub fn identifier(&self) -> String {
        let mut text = String::with_capacity(96);
        text.push('{');
        let mut put = |key: &str, value: &str| {
            if value.is_empty() {
                return;
            }
            if text.len() > 1 {
                text.push(',');
            }
            text.push('"');
            text.push_str(key);
            text.push_str("\":");
            // A JSON string of the value; strings always serialize.
            text.push_str(&serde_json::to_string(value).unwrap_or_default());
        };
        put("manager", &self.manager);
        put("operation", &self.operation);
        if self.operation != APPLY {
            put("apiVersion", &self.api_version);
        }
        put("subresource", &self.subresource);
        text.push('}');
        text
    }

    /// The fields of an identifier; one that is not an entry's JSON names a manager as is.
    pub fn parse(identifier: &str) -> ManagerInfo {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(identifier) else {
            return ManagerInfo {
                manager: identifier.to_string(),
                ..Default::default()
            };
        };
        let get = |k: &str| {
            map.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ManagerInfo {
            manager: get("manager"),
            operation: get("operation"),
            api_version: get("apiVersion"),
            subresource: get("subresource"),
        }
    }
}

/// Why a managedFields list cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

/// True when a client asks to clear managedFields: an empty list, or one empty entry
/// (upstream's isResetManagedFields). A missing field is no reset.
pub fn is_reset(entries: Option<&Value>) -> bool {
    match entries {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(only)] => only.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

/// Reads a managedFields list (absent or null: no managers).
pub fn decode(entries: Option<&Value>) -> Result<Managed, DecodeError> {
    let items = match entries {
        None | Some(Value::Null) => return Ok(Managed::default()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(DecodeError("managedFields must be a list".into())),
    };
    let mut managed = Managed::default();
    for item in items {
        let Value::Object(entry) = item else {
            return Err(DecodeError(
                "a managedFields entry must be an object".into(),
            ));
        };
        let text = |k: &str| match entry.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(DecodeError(format!("{k} must be a string"))),
        };
        let info = ManagerInfo {
            manager: text("manager")?,
            operation: text("operation")?,
            api_version: text("apiVersion")?,
            subresource: text("subresource")?,
        };
        let fields_type = text("fieldsType")?;
        if fields_type != FIELDS_V1 {
            return Err(DecodeError(format!(
                "fieldsType {fields_type:?} unsupported"
            )));
        }
        let set = match entry.get("fieldsV1") {
            None | Some(Value::Null) => Default::default(),
            Some(v) => fieldsv1::from_value(v).map_err(|e| DecodeError(e.to_string()))?,
        };
        let id = info.identifier();
        if let Some(time) = entry.get("time").and_then(Value::as_str) {
            managed.times.insert(id.clone(), time.to_string());
        }
        managed.fields.insert(
            id,
            VersionedSet {
                set,
                api_version: info.api_version.clone(),
                applied: info.operation == APPLY,
            },
        );
    }
    Ok(managed)
}

/// The managedFields list, sorted as upstream sorts it: by operation (Apply first), time,
/// manager, apiVersion and subresource.
pub fn encode(managed: &Managed) -> Vec<Value> {
    let mut rows: Vec<(ManagerInfo, Option<&String>, &VersionedSet)> = managed
        .fields
        .iter()
        .map(|(id, vs)| {
            let mut info = ManagerInfo::parse(id);
            info.api_version = vs.api_version.clone();
            (info, managed.times.get(id), vs)
        })
        .collect();
    let seconds = |t: Option<&String>| {
        t.and_then(|t| crate::object::parse_time(t))
            .map(|t| t.timestamp())
            .unwrap_or(0)
    };
    rows.sort_by(|(a, at, _), (b, bt, _)| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| seconds(*at).cmp(&seconds(*bt)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    rows.into_iter()
        .map(|(info, time, vs)| {
            let mut entry = Map::new();
            if !info.manager.is_empty() {
                entry.insert("manager".into(), Value::from(info.manager));
            }
            if !info.operation.is_empty() {
                entry.insert("operation".into(), Value::from(info.operation));
            }
            if !info.api_version.is_empty() {
                entry.insert("apiVersion".into(), Value::from(info.api_version));
            }
            if let Some(time) = time {
                entry.insert("time".into(), Value::from(time.as_str()));
            }
            entry.insert("fieldsType".into(), Value::from(FIELDS_V1));
            entry.insert("fieldsV1".into(), fieldsv1::to_value(&vs.set));
            if !info.subresource.is_empty() {
                entry.insert("subresource".into(), Value::from(info.subresource));
            }
            Value::Object(entry)
        })
        .collect()
}

#[cfg(test)]
#[path = "entries_tests.rs"]
mod tests;
