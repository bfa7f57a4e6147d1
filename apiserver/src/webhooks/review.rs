//! The AdmissionReview a webhook is sent and what its response says (upstream's
//! webhook/request and the dispatchers' handling of responses): the request in
//! `admission.k8s.io/v1` (or v1beta1 when a webhook accepts only that), the verdict, the
//! base64 JSON patch, warnings and audit annotations; and the matchConditions, CEL
//! expressions over `object`, `oldObject` and `request`.

use std::collections::BTreeMap;

use apiextensions::cel::{Authorizer, Bindings, Expression, RequestResource};
use base64::Engine;
use registry::admission::{Attributes, Operation};
use registry::object::Object;
use registry::patch::{apply_patch, PatchType};
use serde_json::{json, Value};

use super::rules::operation_name;
use super::Hook;

/// A review about to be sent.
pub struct Review {
    pub uid: String,
    /// The whole AdmissionReview.
    pub document: Value,
}

/// The options kind of each operation, as upstream sends it.
fn options_kind(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    }
}

/// The AdmissionReview version the webhook takes: v1 if it accepts it, else v1beta1.
fn review_version(hook: &Hook) -> &'static str {
    let accepted: Vec<&str> = hook.webhook["admissionReviewVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if accepted.contains(&"v1") || !accepted.contains(&"v1beta1") {
        "admission.k8s.io/v1"
    } else {
        "admission.k8s.io/v1beta1"
    }
}

pub fn request(hook: &Hook, attrs: &Attributes<'_>, obj: Option<&Object>) -> Review {
    let uid = uuid::Uuid::new_v4().to_string();
    let request = admission_request(&uid, attrs, obj);
    Review {
        uid,
        document: json!({
            "apiVersion": review_version(hook),
            "kind": "AdmissionReview",
            "request": request,
        }),
    }
}

/// `request`, for a webhook that takes the request in through an equivalent version
/// (`attrs` and `obj` converted to it): `requestKind`, `requestResource` and
/// `requestSubResource` say what was requested.
pub fn request_as(
    hook: &Hook,
    attrs: &Attributes<'_>,
    obj: Option<&Object>,
    requested: &registry::catalogue::ResourceInfo,
) -> Review {
    let mut review = request(hook, attrs, obj);
    set_requested(&mut review.document["request"], requested);
    review
}

/// An AdmissionRequest's `requestKind` and `requestResource`: what the client asked for, when
/// `kind` and `resource` are an equivalent version's (webhooks' and policies' alike).
pub fn set_requested(request: &mut Value, requested: &registry::catalogue::ResourceInfo) {
    request["requestKind"] =
        json!({"group": requested.group, "version": requested.version, "kind": requested.kind});
    request["requestResource"] = json!({"group": requested.group, "version": requested.version,
        "resource": requested.plural});
}

/// The AdmissionRequest of a request (what webhooks are sent, and what admission policies'
/// CEL sees as `request`).
pub fn admission_request(uid: &str, attrs: &Attributes<'_>, obj: Option<&Object>) -> Value {
    let info = attrs.info;
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let resource = json!({"group": info.group, "version": info.version, "resource": info.plural});
    let name = if attrs.name.is_empty() {
        obj.map(|o| registry::object::name(o).to_string())
            .unwrap_or_default()
    } else {
        attrs.name.to_string()
    };
    let mut request = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": operation_name(attrs.operation),
        "userInfo": attrs.user.map(|u| json!({
            "username": u.name,
            "uid": u.uid,
            "groups": u.groups,
            "extra": u.extra,
        })).unwrap_or_else(|| json!({})),
        "object": obj.cloned().unwrap_or(Value::Null),
        "oldObject": attrs.old.cloned().unwrap_or(Value::Null),
        "dryRun": attrs.dry_run,
        "options": {"kind": options_kind(attrs.operation), "apiVersion": "meta.k8s.io/v1"},
    });
    if !name.is_empty() {
        request["name"] = json!(name);
    }
    if let Some(ns) = attrs.namespace.filter(|n| !n.is_empty()) {
        request["namespace"] = json!(ns);
    }
    if !attrs.subresource.is_empty() {
        request["subResource"] = json!(attrs.subresource);
        request["requestSubResource"] = json!(attrs.subresource);
    }
    request
}

/// One matchCondition, compiled.
pub struct Condition {
    name: String,
    compiled: Result<Expression, String>,
}

impl Condition {
    /// The matchConditions of a webhook, in order.
    pub fn all_of(webhook: &Value) -> Vec<Self> {
        webhook["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|condition| {
                let name = condition["name"].as_str().unwrap_or_default().to_string();
                let source = condition["expression"].as_str().unwrap_or_default();
                let compiled = Expression::compile(source)
                    .map_err(|e| format!("compilation failed for matchCondition {name:?}: {e}"));
                Self { name, compiled }
            })
            .collect()
    }
}

/// Whether every matchCondition holds; Err is an expression that could not be evaluated.
/// `authorizer` is the authorizer library's binding for the request, if the server has one.
pub fn match_conditions(
    hook: &Hook,
    review: &Review,
    authorizer: Option<(Authorizer, RequestResource)>,
) -> Result<bool, String> {
    let request = &review.document["request"];
    let mut bindings = Bindings::new(&[
        ("object", &request["object"]),
        ("oldObject", &request["oldObject"]),
        ("request", request),
    ]);
    if let Some((authorizer, resource)) = authorizer {
        bindings.authorizer(authorizer, Some(resource));
    }
    for condition in hook.conditions.iter() {
        let name = &condition.name;
        let expression = condition.compiled.as_ref().map_err(Clone::clone)?;
        let holds = expression
            .evaluate_bool_in(&bindings)
            .map_err(|e| format!("matchCondition {name:?}: {e}"))?;
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the webhook may be called for a dry run (sideEffects None or NoneOnDryRun).
pub fn side_effect_free(hook: &Hook) -> bool {
    matches!(
        hook.webhook["sideEffects"].as_str(),
        Some("None") | Some("NoneOnDryRun")
    )
}

/// What a webhook answered.
#[derive(Debug, Default)]
pub struct Response {
    pub allowed: bool,
    pub status: Value,
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
}

/// Reads a response body; Err in upstream's words for a malformed one.
pub fn response(body: &[u8], uid: &str) -> Result<Response, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("received invalid webhook response: {e}"))?;
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let patch = match response["patch"].as_str() {
        Some(p) if !p.is_empty() => {
            if response["patchType"] != "JSONPatch" {
                return Err(format!(
                    "unsupported patch type {:?}",
                    response["patchType"].as_str().unwrap_or_default()
                ));
            }
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .map_err(|e| format!("received invalid webhook response: {e}"))?,
            )
        }
        _ => None,
    };
    Ok(Response {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        status: response["status"].clone(),
        patch,
        warnings: response["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        audit_annotations: response["auditAnnotations"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
    })
}

/// Applies a webhook's JSON patch.
pub fn apply(obj: &Value, patch: &[u8]) -> Result<Value, String> {
    apply_patch(PatchType::Json, obj, patch, None).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(webhook: Value) -> Hook {
        Hook::new("c", webhook)
    }

    #[test]
    fn responses_are_read_and_checked() {
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(br#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#),
                "warnings": ["careful"], "auditAnnotations": {"k": "v"}}});
        let r = response(body.to_string().as_bytes(), "u1").expect("a response");
        assert!(r.allowed);
        assert_eq!(r.warnings, ["careful"]);
        let patched = apply(
            &json!({"metadata": {}}),
            r.patch.as_deref().unwrap_or_default(),
        )
        .expect("patched");
        assert_eq!(patched["metadata"]["labels"]["a"], "b");
        assert_eq!(
            response(body.to_string().as_bytes(), "u2").unwrap_err(),
            "expected response.uid=\"u2\", got \"u1\""
        );
        assert_eq!(
            response(b"{}", "u1").unwrap_err(),
            "webhook response was absent"
        );
    }

    #[test]
    fn review_versions_and_side_effects() {
        assert_eq!(
            review_version(&hook(json!({"admissionReviewVersions": ["v1beta1"]}))),
            "admission.k8s.io/v1beta1"
        );
        assert_eq!(
            review_version(&hook(json!({"admissionReviewVersions": ["v1", "v1beta1"]}))),
            "admission.k8s.io/v1"
        );
        assert!(side_effect_free(&hook(
            json!({"sideEffects": "NoneOnDryRun"})
        )));
        assert!(!side_effect_free(&hook(json!({"sideEffects": "Some"}))));
    }

    #[test]
    fn match_conditions_see_object_and_request() {
        let review = Review {
            uid: "u".into(),
            document: json!({"request": {"object": {"metadata": {"labels": {"skip": "yes"}}},
                "oldObject": null, "operation": "CREATE"}}),
        };
        let skip = hook(json!({"matchConditions": [
            {"name": "not-skipped", "expression": "!has(object.metadata.labels.skip)"}]}));
        assert_eq!(match_conditions(&skip, &review, None), Ok(false));
        let create = hook(json!({"matchConditions": [
            {"name": "create", "expression": "request.operation == 'CREATE'"}]}));
        assert_eq!(match_conditions(&create, &review, None), Ok(true));
        let bad = hook(json!({"matchConditions": [{"name": "bad", "expression": "object.("}]}));
        assert!(match_conditions(&bad, &review, None).is_err());
    }
}
