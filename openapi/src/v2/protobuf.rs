//! The Swagger 2.0 document in the protobuf form kubectl and client-go ask `/openapi/v2` for
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`): gnostic's openapi_v2
//! messages, written from the JSON document so both forms say the same.
//!
//! Field numbers are those of gnostic's `openapi.v2` package. Values of vendor extensions,
//! defaults, enums and examples travel as YAML text; JSON is YAML, so they are written as
//! JSON.

use serde_json::{Map, Value};

use super::wire::Message;

pub(crate) fn document(doc: &Value) -> Vec<u8> {
    let mut m = Message::new();
    string(&mut m, 1, doc.get("swagger"));
    if let Some(info) = doc.get("info") {
        let mut i = Message::new();
        string(&mut i, 1, info.get("title"));
        string(&mut i, 2, info.get("version"));
        string(&mut i, 3, info.get("description"));
        m.message(2, i);
    }
    strings(&mut m, 5, doc.get("schemes"));
    strings(&mut m, 6, doc.get("consumes"));
    strings(&mut m, 7, doc.get("produces"));
    if let Some(Value::Object(paths)) = doc.get("paths") {
        let mut p = Message::new();
        for (name, item) in paths {
            p.message(2, named(name, path_item(item)));
        }
        m.message(8, p);
    }
    if let Some(Value::Object(definitions)) = doc.get("definitions") {
        let mut d = Message::new();
        for (name, s) in definitions {
            d.message(1, named(name, schema(s)));
        }
        m.message(9, d);
    }
    for requirement in array(doc.get("security")) {
        m.message(12, security_requirement(requirement));
    }
    if let Some(Value::Object(definitions)) = doc.get("securityDefinitions") {
        let mut d = Message::new();
        for (name, scheme) in definitions {
            // Only API keys are described (bearer tokens in the authorization header).
            let mut key = Message::new();
            string(&mut key, 1, scheme.get("type"));
            string(&mut key, 2, scheme.get("name"));
            string(&mut key, 3, scheme.get("in"));
            string(&mut key, 4, scheme.get("description"));
            let mut item = Message::new();
            item.message(2, key);
            d.message(1, named(name, item));
        }
        m.message(13, d);
    }
    extensions(&mut m, 16, doc);
    m.into_bytes()
}

/// gnostic's Named* messages: an ordered map entry.
fn named(name: &str, value: Message) -> Message {
    let mut m = Message::new();
    m.string(1, name);
    m.message(2, value);
    m
}

fn string(m: &mut Message, field: u32, value: Option<&Value>) {
    if let Some(Value::String(s)) = value {
        m.string(field, s);
    }
}

fn strings(m: &mut Message, field: u32, value: Option<&Value>) {
    for s in array(value).iter().filter_map(Value::as_str) {
        m.string(field, s);
    }
}

fn boolean(m: &mut Message, field: u32, value: Option<&Value>) {
    if let Some(Value::Bool(b)) = value {
        m.bool(field, *b);
    }
}

fn int64(m: &mut Message, field: u32, value: Option<&Value>) {
    if let Some(n) = value.and_then(Value::as_i64) {
        m.int64(field, n);
    }
}

fn double(m: &mut Message, field: u32, value: Option<&Value>) {
    if let Some(n) = value.and_then(Value::as_f64) {
        m.double(field, n);
    }
}

fn array(value: Option<&Value>) -> &[Value] {
    match value {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

/// gnostic's Any: the value as YAML text.
fn any(value: &Value) -> Message {
    let mut m = Message::new();
    m.string(2, &value.to_string());
    m
}

/// Every `x-` key of an object, as NamedAny entries of `field`.
fn extensions(m: &mut Message, field: u32, value: &Value) {
    let Value::Object(map) = value else {
        return;
    };
    for (key, v) in map.iter().filter(|(k, _)| k.starts_with("x-")) {
        m.message(field, named(key, any(v)));
    }
}

fn path_item(item: &Value) -> Message {
    let mut m = Message::new();
    let methods = [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ];
    for (method, field) in methods {
        if let Some(op) = item.get(method) {
            m.message(field, operation(op));
        }
    }
    for p in array(item.get("parameters")) {
        m.message(9, parameter(p));
    }
    extensions(&mut m, 10, item);
    m
}

fn operation(op: &Value) -> Message {
    let mut m = Message::new();
    strings(&mut m, 1, op.get("tags"));
    string(&mut m, 2, op.get("summary"));
    string(&mut m, 3, op.get("description"));
    string(&mut m, 5, op.get("operationId"));
    strings(&mut m, 6, op.get("produces"));
    strings(&mut m, 7, op.get("consumes"));
    for p in array(op.get("parameters")) {
        m.message(8, parameter(p));
    }
    if let Some(Value::Object(responses)) = op.get("responses") {
        let mut r = Message::new();
        for (code, response) in responses {
            r.message(1, named(code, response_value(response)));
        }
        m.message(9, r);
    }
    strings(&mut m, 10, op.get("schemes"));
    boolean(&mut m, 11, op.get("deprecated"));
    extensions(&mut m, 13, op);
    m
}

/// ParametersItem { Parameter { BodyParameter | NonBodyParameter { query | path | ... } } }
fn parameter(p: &Value) -> Message {
    let location = p.get("in").and_then(Value::as_str).unwrap_or("query");
    let mut parameter = Message::new();
    if location == "body" {
        let mut body = Message::new();
        string(&mut body, 1, p.get("description"));
        string(&mut body, 2, p.get("name"));
        string(&mut body, 3, p.get("in"));
        boolean(&mut body, 4, p.get("required"));
        if let Some(s) = p.get("schema") {
            body.message(5, schema(s));
        }
        extensions(&mut body, 6, p);
        parameter.message(1, body);
    } else {
        // Header and path sub-schemas lack allowEmptyValue, so their later fields sit one
        // number lower than query's and formData's.
        let (variant, shift) = match location {
            "header" => (1, 1),
            "formData" => (2, 0),
            "path" => (4, 1),
            _ => (3, 0),
        };
        let mut sub = Message::new();
        boolean(&mut sub, 1, p.get("required"));
        string(&mut sub, 2, p.get("in"));
        string(&mut sub, 3, p.get("description"));
        string(&mut sub, 4, p.get("name"));
        if shift == 0 {
            boolean(&mut sub, 5, p.get("allowEmptyValue"));
        }
        string(&mut sub, 6 - shift, p.get("type"));
        string(&mut sub, 7 - shift, p.get("format"));
        boolean(&mut sub, 20 - shift, p.get("uniqueItems"));
        extensions(&mut sub, 23 - shift, p);
        let mut non_body = Message::new();
        non_body.message(variant, sub);
        parameter.message(2, non_body);
    }
    let mut item = Message::new();
    item.message(1, parameter);
    item
}

/// ResponseValue { Response { description, SchemaItem { Schema } } }
fn response_value(response: &Value) -> Message {
    let mut r = Message::new();
    string(&mut r, 1, response.get("description"));
    if let Some(s) = response.get("schema") {
        let mut item = Message::new();
        item.message(1, schema(s));
        r.message(2, item);
    }
    extensions(&mut r, 5, response);
    let mut value = Message::new();
    value.message(1, r);
    value
}

fn schema(s: &Value) -> Message {
    let mut m = Message::new();
    let Value::Object(map) = s else {
        return m;
    };
    let get = |key: &str| map.get(key);
    string(&mut m, 1, get("$ref"));
    string(&mut m, 2, get("format"));
    string(&mut m, 3, get("title"));
    string(&mut m, 4, get("description"));
    if let Some(default) = get("default") {
        m.message(5, any(default));
    }
    double(&mut m, 6, get("multipleOf"));
    double(&mut m, 7, get("maximum"));
    boolean(&mut m, 8, get("exclusiveMaximum"));
    double(&mut m, 9, get("minimum"));
    boolean(&mut m, 10, get("exclusiveMinimum"));
    int64(&mut m, 11, get("maxLength"));
    int64(&mut m, 12, get("minLength"));
    string(&mut m, 13, get("pattern"));
    int64(&mut m, 14, get("maxItems"));
    int64(&mut m, 15, get("minItems"));
    boolean(&mut m, 16, get("uniqueItems"));
    int64(&mut m, 17, get("maxProperties"));
    int64(&mut m, 18, get("minProperties"));
    strings(&mut m, 19, get("required"));
    for value in array(get("enum")) {
        m.message(20, any(value));
    }
    match get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Message::new();
            item.bool(2, *b);
            m.message(21, item);
        }
        Some(additional @ Value::Object(_)) => {
            let mut item = Message::new();
            item.message(1, schema(additional));
            m.message(21, item);
        }
        _ => {}
    }
    match get("type") {
        Some(Value::String(t)) => {
            let mut item = Message::new();
            item.string(1, t);
            m.message(22, item);
        }
        Some(types @ Value::Array(_)) => {
            let mut item = Message::new();
            strings(&mut item, 1, Some(types));
            m.message(22, item);
        }
        _ => {}
    }
    match get("items") {
        Some(Value::Array(all)) => {
            let mut item = Message::new();
            for s in all {
                item.message(1, schema(s));
            }
            m.message(23, item);
        }
        Some(one @ Value::Object(_)) => {
            let mut item = Message::new();
            item.message(1, schema(one));
            m.message(23, item);
        }
        _ => {}
    }
    for s in array(get("allOf")) {
        m.message(24, schema(s));
    }
    if let Some(Value::Object(properties)) = get("properties") {
        m.message(25, properties_message(properties));
    }
    string(&mut m, 26, get("discriminator"));
    boolean(&mut m, 27, get("readOnly"));
    if let Some(example) = get("example") {
        m.message(30, any(example));
    }
    extensions(&mut m, 31, s);
    m
}

fn properties_message(properties: &Map<String, Value>) -> Message {
    let mut m = Message::new();
    for (name, s) in properties {
        m.message(1, named(name, schema(s)));
    }
    m
}

fn security_requirement(requirement: &Value) -> Message {
    let mut m = Message::new();
    if let Value::Object(schemes) = requirement {
        for (name, scopes) in schemes {
            let mut list = Message::new();
            strings(&mut list, 1, Some(scopes));
            m.message(1, named(name, list));
        }
    }
    m
}
