//! The order kube-apiserver writes each built-in type's JSON fields in: its Go struct's field
//! order, as encoding/json follows it. go-to-protobuf declares every message's fields in that
//! same order, so the packaged `.proto` files are the source; what they do not say the
//! schemas do:
//! - TypeMeta is inline in Go and absent from the protos: a kind's `kind` and `apiVersion`
//!   come first;
//! - an embedded struct (`VolumeSource` in Volume, `ProbeHandler` in Probe,
//!   `EphemeralContainerCommon`) is one proto field but inline JSON: a field the schema does
//!   not list whose type is a message is replaced by that message's fields;
//! - a few JSON names are not proto identifiers (`$ref`, `x-kubernetes-list-type`): proto
//!   and schema names are matched ignoring case and punctuation.
//!
//! Types upstream marks `+protobuf=false` (the Table a `kubectl get` reads) are described in
//! proto syntax below and read the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use serde_json::{Map, Value};

/// meta.k8s.io/v1 types without a protobuf encoding upstream (apimachinery's
/// `pkg/apis/meta/v1/types.go`, fields in their Go order).
const UNGENERATED: &str = r#"
package apimachinery.pkg.apis.meta.v1;
option go_package = "k8s.io/apimachinery/pkg/apis/meta/v1";
message Table {
  optional ListMeta metadata = 1;
  repeated TableColumnDefinition columnDefinitions = 2;
  repeated TableRow rows = 3;
}
message TableColumnDefinition {
  optional string name = 1;
  optional string type = 2;
  optional string format = 3;
  optional string description = 4;
  optional int32 priority = 5;
}
message TableRow {
  repeated string cells = 1;
  repeated TableRowCondition conditions = 2;
  optional .apimachinery.pkg.runtime.RawExtension object = 3;
}
message TableRowCondition {
  optional string type = 1;
  optional string status = 2;
  optional string reason = 3;
  optional string message = 4;
}
"#;

/// Kinds served besides those the schemas describe: (apiVersion, kind, definition).
const MORE_KINDS: &[(&str, &str, &str)] = &[
    (
        "meta.k8s.io/v1",
        "Table",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Table",
    ),
    (
        "meta.k8s.io/v1beta1",
        "Table",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Table",
    ),
    (
        "meta.k8s.io/v1",
        "PartialObjectMetadata",
        "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
    ),
    (
        "meta.k8s.io/v1",
        "PartialObjectMetadataList",
        "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList",
    ),
    // v1beta1's PartialObjectMetadata is v1's; its list has v1's members in v1's order.
    (
        "meta.k8s.io/v1beta1",
        "PartialObjectMetadata",
        "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
    ),
    (
        "meta.k8s.io/v1beta1",
        "PartialObjectMetadataList",
        "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList",
    ),
    (
        "apidiscovery.k8s.io/v2",
        "APIGroupDiscoveryList",
        "io.k8s.api.apidiscovery.v2.APIGroupDiscoveryList",
    ),
    (
        "apidiscovery.k8s.io/v2beta1",
        "APIGroupDiscoveryList",
        "io.k8s.api.apidiscovery.v2beta1.APIGroupDiscoveryList",
    ),
];

/// Types whose JSON is not their struct (custom MarshalJSON): a string or number, or raw
/// bytes kept as the client sent them (we keep those as any map: keys sorted).
const SCALARS: &[&str] = &[
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1beta1.JSON",
];

/// An embedded object whose type its own apiVersion and kind say.
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// JSON-schema unions that marshal as the schema they hold (or a bool or list beside it).
fn union_target(definition: &str) -> Option<String> {
    [
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ]
    .iter()
    .find_map(|suffix| definition.strip_suffix(suffix))
    .map(|package| format!("{package}JSONSchemaProps"))
}

/// A proto field: its name and its type (a definition name for message types).
struct ProtoField {
    name: String,
    message: Option<String>,
    map: bool,
}

/// Every message of every `.proto` under `root`, by definition name.
fn read_messages(root: &Path) -> BTreeMap<String, Vec<ProtoField>> {
    let mut files = Vec::new();
    crate::protos::collect(root, &mut files);
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read a .proto"))
        .chain([UNGENERATED.to_string()])
        .collect();
    // proto package (api.core.v1) -> definition prefix (io.k8s.api.core.v1)
    let packages: BTreeMap<String, String> = texts
        .iter()
        .filter_map(|text| {
            Some((
                package(text)?,
                text.lines().find_map(crate::protos::go_package)?,
            ))
        })
        .collect();
    let mut messages = BTreeMap::new();
    for text in &texts {
        let (Some(package), Some(prefix)) = (
            package(text),
            text.lines().find_map(crate::protos::go_package),
        ) else {
            continue;
        };
        let mut current: Option<(String, Vec<ProtoField>)> = None;
        for line in text.lines().map(str::trim) {
            if let Some(name) = line
                .strip_prefix("message ")
                .and_then(|r| r.strip_suffix(" {"))
            {
                current = Some((format!("{prefix}.{name}"), Vec::new()));
            } else if line == "}" {
                if let Some((name, fields)) = current.take() {
                    messages.insert(name, fields);
                }
            } else if let Some((_, fields)) = current.as_mut() {
                if let Some(field) = proto_field(line, &package, &prefix, &packages) {
                    fields.push(field);
                }
            }
        }
    }
    messages
}

fn package(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("package ")?.strip_suffix(';'))
        .map(str::to_string)
}

/// `optional Type name = 3;`, `repeated Type name = 3;`, `map<K, V> name = 3;`
fn proto_field(
    line: &str,
    package: &str,
    prefix: &str,
    packages: &BTreeMap<String, String>,
) -> Option<ProtoField> {
    let (head, _) = line.strip_suffix(';')?.split_once(" = ")?;
    let (ty, name) = head.rsplit_once(' ')?;
    let (ty, map) = match ty.strip_prefix("map<") {
        Some(rest) => (rest.strip_suffix('>')?.split_once(", ")?.1, true),
        None => (ty.split_once(' ')?.1, false),
    };
    let message = match ty.strip_prefix('.') {
        // `.apimachinery.pkg.api.resource.Quantity`: a message of another package.
        Some(qualified) => {
            let (pkg, name) = qualified.rsplit_once('.')?;
            packages.get(pkg).map(|p| format!("{p}.{name}"))
        }
        None if ty.starts_with(|c: char| c.is_ascii_uppercase()) => {
            let _ = package;
            Some(format!("{prefix}.{ty}"))
        }
        None => None,
    };
    Some(ProtoField {
        name: name.to_string(),
        message,
        map,
    })
}

/// How a field's value is laid out, as the generated Rust names it.
fn shape(field: &ProtoField, emitted: &BTreeSet<String>) -> String {
    let Some(ty) = &field.message else {
        return "Shape::Scalar".into();
    };
    if ty == RAW_EXTENSION {
        return "Shape::Dynamic".into();
    }
    let target = union_target(ty).unwrap_or_else(|| ty.clone());
    if SCALARS.contains(&target.as_str()) || !emitted.contains(&target) {
        return "Shape::Scalar".into();
    }
    let wrapper = if field.map { "Map" } else { "Object" };
    format!("Shape::{wrapper}(&{})", ident(&target))
}

fn normalized(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A message's JSON fields in order: embedded messages flattened, names as JSON spells them.
fn json_fields<'a>(
    definition: &str,
    messages: &'a BTreeMap<String, Vec<ProtoField>>,
    schemas: &Map<String, Value>,
    out: &mut Vec<(String, &'a ProtoField)>,
) {
    let Some(fields) = messages.get(definition) else {
        return;
    };
    let properties = schemas
        .get(definition)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    for field in fields {
        let Some(properties) = properties else {
            out.push((field.name.clone(), field));
            continue;
        };
        if properties.contains_key(&field.name) {
            out.push((field.name.clone(), field));
            continue;
        }
        let wanted = normalized(&field.name);
        if let Some(json) = properties.keys().find(|k| normalized(k) == wanted) {
            out.push((json.clone(), field));
        } else if let Some(embedded) = field.message.as_deref().filter(|_| !field.map) {
            // Inline in Go: its fields are this type's. The schema of the outer type lists
            // them, so they are named as the embedded message's schema names them.
            json_fields(embedded, messages, schemas, out);
        } else {
            out.push((field.name.clone(), field));
        }
    }
}

/// Rust source: one `Def` static per message, `DEFINITIONS` sorted by name and `KINDS`
/// sorted by (apiVersion, kind).
pub fn generate(
    root: &Path,
    definitions: &Map<String, Value>,
    kinds: &[(String, String, String, String)],
) -> String {
    let messages = read_messages(root);
    let mut kind_table: Vec<(String, String, String)> = kinds
        .iter()
        .map(|(group, version, kind, name)| {
            let api_version = if group.is_empty() {
                version.clone()
            } else {
                format!("{group}/{version}")
            };
            (api_version, kind.clone(), name.clone())
        })
        .chain(
            MORE_KINDS
                .iter()
                .map(|(a, k, d)| (a.to_string(), k.to_string(), d.to_string())),
        )
        .filter(|(_, _, name)| messages.contains_key(name))
        .collect();
    kind_table.sort();
    kind_table.dedup();
    let kind_definitions: BTreeSet<&str> = kind_table.iter().map(|(_, _, d)| d.as_str()).collect();

    // Messages that are JSON objects of their own.
    let emitted: BTreeSet<String> = messages
        .keys()
        .filter(|name| !SCALARS.contains(&name.as_str()) && name.as_str() != RAW_EXTENSION)
        .filter(|name| union_target(name).is_none())
        .cloned()
        .collect();

    let mut out = String::from(
        "// Generated by build.rs (build/wire_order.rs) from the Kubernetes .proto files.\n\n",
    );
    for name in &emitted {
        let mut fields = Vec::new();
        json_fields(name, &messages, definitions, &mut fields);
        let properties = definitions
            .get(name)
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object);
        let has = |f: &str| fields.iter().any(|(n, _)| n == f);
        let type_meta = !has("kind")
            && !has("apiVersion")
            && (kind_definitions.contains(name.as_str())
                || properties
                    .is_some_and(|p| p.contains_key("kind") && p.contains_key("apiVersion")));
        let mut names: Vec<(String, String)> = Vec::new();
        if type_meta {
            names.push(("kind".into(), "Shape::Scalar".into()));
            names.push(("apiVersion".into(), "Shape::Scalar".into()));
        }
        for (json, field) in &fields {
            if !names.iter().any(|(n, _)| n == json) {
                names.push((json.clone(), shape(field, &emitted)));
            }
        }
        assert!(
            names.len() < 256,
            "{name} has more fields than a rank holds"
        );
        let _ = writeln!(
            out,
            "static {}: Def = Def {{ name: {name:?}, rank: rank_{}, fields: &[",
            ident(name),
            ident(name).to_lowercase()
        );
        for (json, shape) in &names {
            let _ = writeln!(out, "    Field {{ name: {json:?}, shape: {shape} }},");
        }
        out.push_str("] };\n");
        // A match on the name: compiled to a switch on its length and a few comparisons,
        // cheaper per key than a binary search over the names.
        let function = format!("rank_{}", ident(name).to_lowercase());
        if names.is_empty() {
            let _ = writeln!(out, "fn {function}(_: &str) -> Option<u8> {{ None }}");
            continue;
        }
        let _ = writeln!(
            out,
            "fn {function}(field: &str) -> Option<u8> {{ match field {{"
        );
        for (i, (json, _)) in names.iter().enumerate() {
            let _ = writeln!(out, "    {json:?} => Some({i}),");
        }
        out.push_str("    _ => None,\n} }\n");
    }
    out.push_str(
        "\n/// Every definition, sorted by name.\npub(crate) static DEFINITIONS: &[&Def] = &[\n",
    );
    for name in &emitted {
        let _ = writeln!(out, "    &{},", ident(name));
    }
    out.push_str("];\n\n/// (apiVersion, kind, definition), sorted.\npub(crate) static KINDS: &[(&str, &str, &Def)] = &[\n");
    for (api_version, kind, name) in &kind_table {
        if emitted.contains(name) {
            let _ = writeln!(out, "    ({api_version:?}, {kind:?}, &{}),", ident(name));
        }
    }
    out.push_str("];\n");
    out
}

fn ident(definition: &str) -> String {
    definition
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}
