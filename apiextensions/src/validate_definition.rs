//! Validation of a CustomResourceDefinition itself (upstream's
//! ValidateCustomResourceDefinition): names, group, scope, versions with exactly one storage
//! version, conversion (`validate_conversion`), subresources, printer columns, and each version's schema (structural,
//! with its CEL rules compiled).

use std::collections::HashSet;

use serde_json::Value;

use super::cel::Rules;
use super::definition::{Definition, Names, PrinterColumn, Scale, Version};
use super::schema::check_structural;
use super::validate_conversion::{self, Relaxed};
use registry::error::Cause;
use registry::validation::names::{is_dns1035_label, is_dns1123_subdomain};
use registry::validation::quote;

const PRINTER_TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];
const PRINTER_FORMATS: [&str; 8] = [
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "password",
];

/// Every problem of a definition about to be created.
pub fn validate(obj: &Value) -> Vec<Cause> {
    validate_over(obj, None, &[])
}

/// Every problem of a definition about to be stored over `old` (None: created), with the
/// names of the versions whose schema an update leaves as it was: their rules are not held to
/// the per-rule cost limit again (upstream's rule), only to the total.
fn validate_over(obj: &Value, old: Option<&Value>, unchanged: &[&str]) -> Vec<Cause> {
    let old = old.map(Definition::parse);
    let crd = Definition::parse(obj);
    let spec = &crd.spec;
    let mut causes = Vec::new();
    let expected = format!("{}.{}", spec.names.plural, spec.group);
    if crd.metadata.name != expected {
        causes.push(Cause::invalid(
            "metadata.name",
            quote(&crd.metadata.name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if spec.group.is_empty() {
        causes.push(Cause::required("spec.group"));
    } else {
        for why in is_dns1123_subdomain(&spec.group) {
            causes.push(Cause::invalid("spec.group", quote(&spec.group), &why));
        }
        if !spec.group.contains('.') {
            causes.push(Cause::invalid(
                "spec.group",
                quote(&spec.group),
                "should be a domain with at least one dot",
            ));
        }
    }
    match spec.scope.as_str() {
        "Cluster" | "Namespaced" => {}
        "" => causes.push(Cause::required("spec.scope")),
        other => causes.push(Cause::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    causes.extend(names(&spec.names, "spec.names"));
    if let Some(conversion) = &spec.conversion {
        causes.extend(validate_conversion::validate(
            conversion,
            spec.preserve_unknown_fields == Some(true),
            Relaxed::over(old.as_ref()),
        ));
    }
    if spec.preserve_unknown_fields == Some(true) {
        causes.push(Cause::invalid(
            "spec.preserveUnknownFields",
            "true",
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    causes.extend(versions(&spec.versions, unchanged));
    causes
}

/// What an update may not change, on top of `validate`.
pub fn validate_update(new: &Value, old: &Value) -> Vec<Cause> {
    let (new_value, old_value) = (new, old);
    let (new, old) = (Definition::parse(new), Definition::parse(old));
    let schema_of = |v: &Version| v.schema.as_ref().and_then(|s| s.open_api_v3_schema.clone());
    let unchanged: Vec<&str> = new
        .spec
        .versions
        .iter()
        .filter(|v| {
            old.spec
                .versions
                .iter()
                .any(|o| o.name == v.name && schema_of(o) == schema_of(v))
        })
        .map(|v| v.name.as_str())
        .collect();
    let mut causes = validate_over(new_value, Some(old_value), &unchanged);
    if new.spec.group != old.spec.group {
        causes.push(Cause::invalid(
            "spec.group",
            quote(&new.spec.group),
            "field is immutable",
        ));
    }
    if new.spec.scope != old.spec.scope {
        causes.push(Cause::invalid(
            "spec.scope",
            quote(&new.spec.scope),
            "field is immutable",
        ));
    }
    causes
}

fn names(names: &Names, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut label = |field: &str, value: &str, required: bool| {
        let at = format!("{path}.{field}");
        if value.is_empty() {
            if required {
                causes.push(Cause::required(&at));
            }
            return;
        }
        for why in is_dns1035_label(value) {
            causes.push(Cause::invalid(&at, quote(value), &why));
        }
    };
    label("plural", &names.plural, true);
    label("singular", &names.singular, false);
    for (i, short) in names.short_names.iter().enumerate() {
        label(&format!("shortNames[{i}]"), short, true);
    }
    for (i, category) in names.categories.iter().enumerate() {
        label(&format!("categories[{i}]"), category, true);
    }
    let mut kind = |field: &str, value: &str| {
        let at = format!("{path}.{field}");
        if value.is_empty() {
            causes.push(Cause::required(&at));
        } else if !is_dns1035_label(&value.to_lowercase()).is_empty() {
            causes.push(Cause::invalid(
                &at,
                quote(value),
                "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
            ));
        }
    };
    kind("kind", &names.kind);
    if !names.list_kind.is_empty() {
        kind("listKind", &names.list_kind);
        if names.list_kind == names.kind {
            causes.push(Cause::invalid(
                &format!("{path}.listKind"),
                quote(&names.list_kind),
                "kind and listKind may not be the same",
            ));
        }
    }
    causes
}

fn versions(versions: &[Version], unchanged: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    if versions.is_empty() {
        causes.push(Cause::new(
            "FieldValueRequired",
            "spec.versions",
            "Required value: must have exactly one version marked as storage version".into(),
        ));
        return causes;
    }
    let storage = versions.iter().filter(|v| v.storage).count();
    if storage != 1 {
        causes.push(Cause::invalid(
            "spec.versions",
            format!("{storage} storage versions"),
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions.iter().any(|v| v.served) {
        causes.push(Cause::invalid(
            "spec.versions",
            "no served versions",
            "must have at least one version served",
        ));
    }
    let mut seen = HashSet::new();
    for (i, version) in versions.iter().enumerate() {
        let at = format!("spec.versions[{i}]");
        if version.name.is_empty() {
            causes.push(Cause::required(&format!("{at}.name")));
        } else {
            for why in is_dns1035_label(&version.name) {
                causes.push(Cause::invalid(
                    &format!("{at}.name"),
                    quote(&version.name),
                    &why,
                ));
            }
        }
        if !seen.insert(version.name.as_str()) {
            causes.push(Cause::duplicate(
                &format!("{at}.name"),
                quote(&version.name),
            ));
        }
        causes.extend(schema(
            version,
            &at,
            !unchanged.contains(&version.name.as_str()),
        ));
        if let Some(scale) = version.subresources.as_ref().and_then(|s| s.scale.as_ref()) {
            causes.extend(scale_paths(scale, &format!("{at}.subresources.scale")));
        }
        for (j, column) in version.additional_printer_columns.iter().enumerate() {
            causes.extend(printer_column(
                column,
                &format!("{at}.additionalPrinterColumns[{j}]"),
            ));
        }
    }
    causes
}

fn schema(version: &Version, at: &str, limit_each_rule: bool) -> Vec<Cause> {
    let path = format!("{at}.schema.openAPIV3Schema");
    let Some(schema) = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
    else {
        return vec![Cause::new(
            "FieldValueRequired",
            &path,
            "Required value: schemas are required".into(),
        )];
    };
    let mut causes = check_structural(schema, &path);
    if version
        .subresources
        .as_ref()
        .is_some_and(|s| s.status.is_some())
    {
        causes.extend(status_root(schema, &path));
    }
    causes.extend(Rules::check(schema, &path, limit_each_rule));
    causes
}

/// With the status subresource the status part is written apart from the rest, so the root
/// may only describe its properties (upstream's rule for such schemas).
fn status_root(schema: &Value, path: &str) -> Vec<Cause> {
    const ALLOWED: [&str; 4] = ["description", "type", "properties", "required"];
    let Some(root) = schema.as_object() else {
        return Vec::new();
    };
    let extra: Vec<&str> = root
        .keys()
        .map(String::as_str)
        .filter(|k| !ALLOWED.contains(k) && !k.starts_with("x-kubernetes-"))
        .collect();
    if extra.is_empty() {
        return Vec::new();
    }
    vec![Cause::invalid(
        path,
        quote(&extra.join(", ")),
        "must only have \"properties\", \"required\" or \"description\" at the root if the status subresource is enabled",
    )]
}

fn scale_paths(scale: &Scale, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut path = |field: &str, value: &str, under: &[&str], required: bool| {
        let at = format!("{at}.{field}");
        if value.is_empty() {
            if required {
                causes.push(Cause::required(&at));
            }
            return;
        }
        let ok = under
            .iter()
            .any(|root| value.strip_prefix(root).is_some_and(|r| r.starts_with('.')))
            && !value.contains('[')
            && !value.ends_with('.');
        if !ok {
            let roots: Vec<String> = under.iter().map(|r| r.to_string()).collect();
            causes.push(Cause::invalid(
                &at,
                quote(value),
                &format!("should be a json path under {}", roots.join(" or ")),
            ));
        }
    };
    path(
        "specReplicasPath",
        &scale.spec_replicas_path,
        &[".spec"],
        true,
    );
    path(
        "statusReplicasPath",
        &scale.status_replicas_path,
        &[".status"],
        true,
    );
    if let Some(selector) = &scale.label_selector_path {
        path("labelSelectorPath", selector, &[".spec", ".status"], false);
    }
    causes
}

fn printer_column(column: &PrinterColumn, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if column.name.is_empty() {
        causes.push(Cause::required(&format!("{at}.name")));
    }
    if !PRINTER_TYPES.contains(&column.kind.as_str()) {
        causes.push(Cause::not_supported(
            &format!("{at}.type"),
            &column.kind,
            &PRINTER_TYPES,
        ));
    }
    if !column.format.is_empty() && !PRINTER_FORMATS.contains(&column.format.as_str()) {
        causes.push(Cause::not_supported(
            &format!("{at}.format"),
            &column.format,
            &PRINTER_FORMATS,
        ));
    }
    if column.json_path.is_empty() {
        causes.push(Cause::required(&format!("{at}.jsonPath")));
    }
    if column.priority < 0 {
        causes.push(Cause::invalid(
            &format!("{at}.priority"),
            column.priority,
            "must be greater than or equal to 0",
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::validate;

    fn definition(root: serde_json::Value, status: bool) -> serde_json::Value {
        let mut version = json!({"name": "v1", "served": true, "storage": true,
                                 "schema": {"openAPIV3Schema": root}});
        if status {
            version["subresources"] = json!({"status": {}});
        }
        json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"}, "versions": [version]},
        })
    }

    #[test]
    fn status_subresource_limits_the_root_schema() {
        let root = json!({"type": "object", "minProperties": 1,
                          "properties": {"spec": {"type": "object"}}});
        assert!(validate(&definition(root.clone(), false)).is_empty());
        let causes = validate(&definition(root, true));
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "spec.versions[0].schema.openAPIV3Schema");
        assert!(causes[0].message.contains("minProperties"), "{causes:?}");
        let plain = json!({"type": "object", "description": "d", "required": ["spec"],
                           "properties": {"spec": {"type": "object"}},
                           "x-kubernetes-validations": [{"rule": "has(self.spec)"}]});
        assert_eq!(validate(&definition(plain, true)), vec![]);
    }
}
