//! The ConversionReview a conversion webhook is sent and what its answer must be (upstream's
//! webhook_converter.go): the request in the first review version the definition lists that
//! this server speaks; the response of the same review version with the request's uid (v1),
//! a Success result, as many objects as were sent, each in the desired version, of the same
//! kind, name, namespace and uid. Of the metadata the webhook may change only labels and
//! annotations; the rest is restored from the object sent.

use serde_json::{json, Map, Value};

use registry::go_fmt::type_name;
use registry::validation::{validate_annotations, validate_labels};

/// The review versions this server speaks, as a definition lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1beta1,
}

impl ReviewVersion {
    /// The first of `listed` this server speaks (createConversionReviewObjects).
    pub fn first_of(listed: &[String]) -> Option<Self> {
        listed.iter().find_map(|v| match v.as_str() {
            "v1" => Some(Self::V1),
            "v1beta1" => Some(Self::V1beta1),
            _ => None,
        })
    }

    fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "apiextensions.k8s.io/v1",
            Self::V1beta1 => "apiextensions.k8s.io/v1beta1",
        }
    }
}

/// The review asking for `objects` in `desired`.
pub fn request(version: ReviewVersion, uid: &str, desired: &str, objects: &[&Value]) -> Value {
    json!({
        "apiVersion": version.api_version(),
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    })
}

/// Go's GroupVersionKind.String() of an apiVersion and kind.
pub fn gvk(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The converted objects of a webhook's answer, or why the answer is not one
/// (getConvertedObjectsFromResponse).
pub fn converted_objects(
    version: ReviewVersion,
    uid: &str,
    response: &Value,
) -> Result<Vec<Value>, String> {
    if version == ReviewVersion::V1 {
        let api_version = response["apiVersion"].as_str().unwrap_or_default();
        let kind = response["kind"].as_str().unwrap_or_default();
        if (api_version, kind) != (version.api_version(), "ConversionReview") {
            return Err(format!(
                "expected webhook response of {}, got {}",
                gvk(version.api_version(), "ConversionReview"),
                gvk(api_version, kind)
            ));
        }
    }
    let Some(answer) = response.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    // v1beta1 answers were never checked for their uid; upstream keeps it that way.
    let answered = answer["uid"].as_str().unwrap_or_default();
    if version == ReviewVersion::V1 && answered != uid {
        return Err(format!("expected response.uid={uid:?}, got {answered:?}"));
    }
    let result = &answer["result"];
    let status = result["status"].as_str().unwrap_or_default();
    if status != "Success" {
        return Err(match result["message"].as_str().filter(|m| !m.is_empty()) {
            Some(message) => message.to_string(),
            None => format!("response.result.status was '{status}', not 'Success'"),
        });
    }
    Ok(answer["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// validateConvertedObject: the same kind, name, namespace and uid.
pub fn check_identity(original: &Value, converted: &Value) -> Result<(), String> {
    let text = |v: &Value, path: &str| {
        v.pointer(path)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    for (what, path) in [
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("UID", "/metadata/uid"),
    ] {
        let (expected, got) = (text(original, path), text(converted, path));
        if expected != got {
            return Err(format!("must have the same {what}: {expected} != {got}"));
        }
    }
    Ok(())
}

/// restoreObjectMeta: the original's metadata, with the converted object's labels and
/// annotations (checked when they changed).
pub fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(meta)) => meta.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ))
        }
    };
    let mut restored: Map<String, Value> = match original.get("metadata") {
        Some(Value::Object(meta)) => meta.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let given = match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(given)) => given,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        };
        let before = restored.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != given.len();
        for (key, value) in given {
            if !value.is_string() {
                return Err(format!(
                    "metadata.{field}[{key}] must be a string, but is {} in converted object",
                    go_type(value)
                ));
            }
            changed |= before.and_then(|b| b.get(key)) != Some(value);
        }
        if changed {
            let value = Value::Object(given.clone());
            let causes = match field {
                "labels" => validate_labels(&value, "metadata.labels"),
                // Upstream's path here says "annotation".
                _ => validate_annotations(&value, "metadata.annotation"),
            };
            let messages: Vec<String> = causes.iter().map(|c| c.full_message()).collect();
            match messages.len() {
                0 => {}
                1 => return Err(messages.concat()),
                _ => return Err(format!("[{}]", messages.join(", "))),
            }
        }
        restored.insert(field.into(), Value::Object(given.clone()));
    }
    if let Some(obj) = converted.as_object_mut() {
        obj.insert("metadata".into(), Value::Object(restored));
    }
    Ok(())
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        other => type_name(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget(version: &str) -> Value {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
            "metadata": {"name": "w", "namespace": "d", "uid": "u-1", "resourceVersion": "7",
                "generation": 2, "labels": {"a": "1"}},
            "spec": {"host": "h", "port": 80}})
    }

    #[test]
    fn requests_speak_the_first_known_review_version() {
        let listed = vec!["v2".to_string(), "v1beta1".into(), "v1".into()];
        assert_eq!(
            ReviewVersion::first_of(&listed),
            Some(ReviewVersion::V1beta1)
        );
        assert_eq!(ReviewVersion::first_of(&["v3".to_string()]), None);
        let w = widget("v1");
        let review = request(ReviewVersion::V1, "id", "example.com/v2", &[&w]);
        assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v2");
        assert_eq!(review["request"]["objects"][0]["spec"]["port"], 80);
        assert_eq!(
            gvk("example.com/v1", "Widget"),
            "example.com/v1, Kind=Widget"
        );
        assert_eq!(gvk("", ""), "/, Kind=");
    }

    fn answer(uid: &str, result: Value, objects: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, "result": result, "convertedObjects": objects}})
    }

    #[test]
    fn answers_are_checked_as_upstream_checks_them() {
        let ok = answer("id", json!({"status": "Success"}), json!([widget("v2")]));
        assert_eq!(
            converted_objects(ReviewVersion::V1, "id", &ok).map(|o| o.len()),
            Ok(1)
        );
        assert_eq!(
            converted_objects(ReviewVersion::V1, "other", &ok),
            Err("expected response.uid=\"other\", got \"id\"".into())
        );
        // v1beta1 answers are not held to the uid.
        let mut beta = ok.clone();
        beta["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        assert!(converted_objects(ReviewVersion::V1beta1, "other", &beta).is_ok());
        assert_eq!(
            converted_objects(ReviewVersion::V1, "id", &beta),
            Err("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview".into())
        );
        let failed = answer(
            "id",
            json!({"status": "Failure", "message": "cannot convert"}),
            json!([]),
        );
        assert_eq!(
            converted_objects(ReviewVersion::V1, "id", &failed),
            Err("cannot convert".into())
        );
        let bare = answer("id", json!({"status": "Failure"}), json!([]));
        assert_eq!(
            converted_objects(ReviewVersion::V1, "id", &bare),
            Err("response.result.status was 'Failure', not 'Success'".into())
        );
        let none = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
        assert_eq!(
            converted_objects(ReviewVersion::V1, "id", &none),
            Err("no response provided".into())
        );
    }

    #[test]
    fn identity_must_not_change() {
        let mut renamed = widget("v2");
        renamed["metadata"]["name"] = json!("x");
        assert_eq!(
            check_identity(&widget("v1"), &renamed),
            Err("must have the same name: w != x".into())
        );
        let mut other_uid = widget("v2");
        other_uid["metadata"]["uid"] = json!("u-2");
        assert_eq!(
            check_identity(&widget("v1"), &other_uid),
            Err("must have the same UID: u-1 != u-2".into())
        );
        assert_eq!(check_identity(&widget("v1"), &widget("v2")), Ok(()));
    }

    #[test]
    fn only_labels_and_annotations_survive_from_the_answer() {
        let original = widget("v1");
        let mut converted = widget("v2");
        converted["metadata"]["generation"] = json!(9);
        converted["metadata"]["labels"] = json!({"b": "2"});
        converted["metadata"]["annotations"] = json!({"note": "x"});
        restore_metadata(&original, &mut converted).expect("restored");
        assert_eq!(converted["metadata"]["generation"], 2);
        assert_eq!(converted["metadata"]["resourceVersion"], "7");
        assert_eq!(converted["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(converted["metadata"]["annotations"], json!({"note": "x"}));
        // Labels left out of the answer are gone, as upstream drops them.
        let mut unlabelled = widget("v2");
        unlabelled["metadata"] = json!({"name": "w"});
        restore_metadata(&original, &mut unlabelled).expect("restored");
        assert_eq!(unlabelled["metadata"].get("labels"), None);
        assert_eq!(unlabelled["metadata"]["uid"], "u-1");
        let mut bad = widget("v2");
        bad["metadata"]["labels"] = json!({"a": 1});
        assert_eq!(
            restore_metadata(&original, &mut bad),
            Err("metadata.labels[a] must be a string, but is int64 in converted object".into())
        );
        let mut invalid = widget("v2");
        invalid["metadata"]["labels"] = json!({"a": "not valid!"});
        let why = restore_metadata(&original, &mut invalid).expect_err("refused");
        assert!(
            why.starts_with("metadata.labels: Invalid value: \"not valid!\""),
            "{why}"
        );
        let mut missing = widget("v2");
        missing.as_object_mut().map(|o| o.remove("metadata"));
        assert_eq!(
            restore_metadata(&original, &mut missing),
            Err("missing metadata in converted object".into())
        );
    }
}
