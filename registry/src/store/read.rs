//! Get and list: selectors become one storage predicate; lists page from one snapshot.

use std::sync::Arc;

use serde_json::{json, Value};
use storage::{KeyValue, ListResult, Predicate, ReadRevision};

use super::list_stream::list_metadata;
use super::Store;
use crate::error::Result;
use crate::object::{self, Object};
use crate::options::ListOptions;
use crate::selector::fields::FieldSelector;
use crate::selector::labels::LabelSelector;

/// Label and field selectors of a request, checked against what the resource supports.
pub(crate) struct Selection {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selection {
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, obj: &Object) -> bool {
        self.labels.matches_labels(object::labels(obj))
            && self
                .fields
                .matches(&|field: &str| Some(selectable_value(obj, field)))
    }

    /// The name a `metadata.name=<x>` selector pins, if that is all it says.
    pub fn single_name(&self) -> Option<String> {
        if !self.labels.is_empty() {
            return None;
        }
        self.fields
            .requires_exact_match("metadata.name")
            .map(str::to_string)
    }
}

/// The value a field selector compares, as upstream's ToSelectableFields computes it: some
/// labels name another field, and absent booleans and counts read as their zero value.
fn selectable_value(obj: &Object, field: &str) -> String {
    let value = |path: &str| object::field_value(obj, path);
    let or = |v: String, zero: &str| if v.is_empty() { zero.to_string() } else { v };
    match field {
        "metadata.name" => object::name(obj).to_string(),
        "metadata.namespace" => object::namespace(obj).to_string(),
        // Jobs: the label predates the field's name.
        "status.successful" => or(value("status.succeeded"), "0"),
        // Core events: the reporting component, from either place it may be recorded.
        "source" => or(value("source.component"), &value("reportingComponent")),
        "spec.hostNetwork" | "spec.unschedulable" => or(value(field), "false"),
        "status.replicas" => or(value(field), "0"),
        other => value(other),
    }
}

impl Store {
    pub(crate) fn selection(&self, opts: &ListOptions) -> Result<Selection> {
        let labels = LabelSelector::parse(opts.label_selector.as_deref().unwrap_or_default())?;
        let fields = FieldSelector::parse(opts.field_selector.as_deref().unwrap_or_default())?;
        let mut supported: Vec<&str> = vec!["metadata.name", "metadata.namespace"];
        supported.extend(self.info.field_selectors.iter().map(String::as_str));
        fields.check_supported(&supported)?;
        Ok(Selection { labels, fields })
    }

    /// The storage predicate of a selection (None: everything matches). Selectors name the
    /// fields of the shape served, so stored objects are converted to it first.
    pub(crate) fn predicate(&self, selection: Selection) -> Option<Predicate> {
        if selection.is_everything() {
            return None;
        }
        let selection = Arc::new(selection);
        let conversion = self.conversion.clone();
        Some(Arc::new(move |kv: &KeyValue| {
            let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else {
                return false;
            };
            if let Some(conversion) = &conversion {
                conversion.to_served(&mut obj);
            }
            selection.matches(&obj)
        }))
    }

    pub async fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &ListOptions,
    ) -> Result<Object> {
        let kv = self.read_one(namespace, name, opts).await?;
        self.served_one(self.decode(&kv)?).await
    }

    /// The stored pair behind a get.
    pub(super) async fn read_one(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &ListOptions,
    ) -> Result<KeyValue> {
        let namespace = self.scope(namespace)?;
        // A get never reads an exact old revision: NotOlderThan is its meaning of a version.
        let revision = match opts.read_revision()? {
            ReadRevision::Exact(r) => ReadRevision::NotOlderThan(r),
            other => other,
        };
        self.storage
            .get(&self.key(namespace, name), revision)
            .await
            .map_err(self.storage_err(name))
    }

    /// A list object (`<Kind>List`) of what matches, one page if `limit` is set.
    pub async fn list(&self, namespace: Option<&str>, opts: &ListOptions) -> Result<Object> {
        let result = self.read_list(namespace, opts).await?;
        let mut items = Vec::with_capacity(result.items.len());
        for kv in &result.items {
            items.push(self.decode(kv)?);
        }
        let items = self.served_all(items).await?;
        let meta = list_metadata(result.revision, result.continue_token, result.remaining);
        Ok(json!({
            "apiVersion": self.info.api_version(),
            "kind": self.info.list_kind,
            "metadata": meta,
            "items": items,
        }))
    }

    /// The stored pairs behind a list.
    pub(super) async fn read_list(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult> {
        let (prefix, storage_opts) = self.list_request(namespace, opts)?;
        self.storage
            .get_list(&prefix, storage_opts)
            .await
            .map_err(self.storage_err(""))
    }

    /// Where a list reads and with what options: its selectors become one predicate.
    pub(super) fn list_request(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<(String, storage::ListOptions)> {
        let namespace = namespace.filter(|n| !n.is_empty() && self.info.namespaced);
        let selection = self.selection(opts)?;
        let storage_opts = storage::ListOptions {
            revision: opts.read_revision()?,
            limit: opts.limit.max(0),
            continue_token: opts.continue_token.clone().filter(|c| !c.is_empty()),
            predicate: self.predicate(selection),
            recursive: true,
        };
        Ok((self.list_prefix(namespace), storage_opts))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::selectable_value;

    #[test]
    fn selectable_fields_follow_upstream_labels() {
        let job = json!({"status": {"succeeded": 2}});
        assert_eq!(selectable_value(&job, "status.successful"), "2");
        assert_eq!(selectable_value(&json!({}), "status.successful"), "0");
        let event = json!({"reportingComponent": "kubelet"});
        assert_eq!(selectable_value(&event, "source"), "kubelet");
        let event = json!({"source": {"component": "scheduler"}});
        assert_eq!(selectable_value(&event, "source"), "scheduler");
        assert_eq!(
            selectable_value(&json!({"spec": {}}), "spec.hostNetwork"),
            "false"
        );
        assert_eq!(selectable_value(&json!({}), "status.replicas"), "0");
        assert_eq!(
            selectable_value(&json!({"metadata": {"name": "n"}}), "metadata.name"),
            "n"
        );
    }
}
