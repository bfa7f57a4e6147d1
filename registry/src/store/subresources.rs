//! The `scale` subresource (autoscaling/v1 Scale) over the replicas of the object.

use serde_json::{json, Value};

use super::managed::{Endpoint, Tracking};
use super::update::{How, Subresource};
use super::Store;
use crate::catalogue::ScaleSubresource;
use crate::error::{RegistryError, Result};
use crate::object::{self, Object};
use crate::options::{ListOptions, WriteOptions};
use crate::patch::{self, PatchType};
use crate::selector::labels::LabelSelector;

fn path_parts(path: &str) -> Vec<&str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
        .collect()
}

impl Store {
    fn scale_spec(&self) -> Result<&ScaleSubresource> {
        self.info
            .scale()
            .ok_or_else(|| RegistryError::not_found(&self.info.qualified_resource(), "scale"))
    }

    /// The Scale view of an object.
    fn to_scale(&self, obj: &Object) -> Result<Object> {
        let scale = self.scale_spec()?;
        let replicas = |path: &str| {
            crate::strategy::at(obj, &path_parts(path))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        let selector = match &scale.label_selector_path {
            Some(path) => crate::strategy::at(obj, &path_parts(path))
                .and_then(Value::as_str)
                .map(str::to_string),
            None => obj.get("spec").and_then(|s| s.get("selector")).map(|sel| {
                // core/v1 RCs keep a plain map; apps/v1 a metav1.LabelSelector.
                let as_selector =
                    if sel.get("matchLabels").is_some() || sel.get("matchExpressions").is_some() {
                        sel.clone()
                    } else {
                        json!({"matchLabels": sel})
                    };
                LabelSelector::from_label_selector_json(&as_selector)
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            }),
        };
        let mut status = json!({"replicas": replicas(&scale.status_replicas_path)});
        if let Some(selector) = selector.filter(|s| !s.is_empty()) {
            status["selector"] = json!(selector);
        }
        let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
        let mut scale_meta = json!({});
        for field in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = meta.get(field) {
                scale_meta[field] = v.clone();
            }
        }
        Ok(json!({
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": scale_meta,
            "spec": {"replicas": replicas(&scale.spec_replicas_path)},
            "status": status,
        }))
    }

    pub async fn get_scale(&self, namespace: Option<&str>, name: &str) -> Result<Object> {
        self.scale_spec()?;
        let obj = self.get(namespace, name, &ListOptions::default()).await?;
        self.to_scale(&obj)
    }

    /// Sets the replicas from a Scale (PUT) or a patch of the Scale (PATCH).
    pub async fn update_scale(
        &self,
        namespace: Option<&str>,
        name: &str,
        mut change: ScaleChange<'_>,
        opts: &WriteOptions,
    ) -> Result<Object> {
        let spec_path = self.scale_spec()?.spec_replicas_path.clone();
        if let ScaleChange::Patch(PatchType::Apply, body) = &change {
            let obj = self.apply_scale(namespace, name, body, opts).await?;
            return self.to_scale(&obj);
        }
        if let ScaleChange::Replace(scale) = &mut change {
            self.check_scale_fields(scale, opts, false)?;
        }
        let how = How {
            sub: Subresource::Main,
            endpoint: Endpoint::Scale,
            tracking: Tracking::Update,
        };
        let (obj, _) = self
            .write_as(namespace, name, how, opts, |current| {
                let current = self.existing(current, name)?;
                let scale = self.to_scale(current)?;
                let wanted = match &change {
                    ScaleChange::Replace(scale) => scale.clone(),
                    ScaleChange::Patch(kind, body) => {
                        let mut patched = patch::apply_patch(*kind, &scale, body, None)?;
                        self.check_scale_fields(&mut patched, opts, true)?;
                        patched
                    }
                };
                let replicas = wanted
                    .get("spec")
                    .and_then(|s| s.get("replicas"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if replicas < 0 {
                    return Err(RegistryError::invalid(
                        &crate::error::Qualified::new("autoscaling", "Scale"),
                        name,
                        vec![crate::error::Cause::invalid(
                            "spec.replicas",
                            replicas,
                            "must be greater than or equal to 0",
                        )],
                    ));
                }
                let mut next = current.clone();
                // A Scale with a resourceVersion is a precondition on the object.
                let rv = object::resource_version(&wanted).to_string();
                object::meta_mut(&mut next).insert("resourceVersion".into(), json!(rv));
                let parts = path_parts(&spec_path);
                set_at(&mut next, &parts, json!(replicas));
                Ok(next)
            })
            .await?;
        self.to_scale(&obj)
    }
}

/// How a scale request changes replicas.
pub enum ScaleChange<'a> {
    Replace(Object),
    Patch(PatchType, &'a [u8]),
}

pub(super) fn set_at(obj: &mut Value, path: &[&str], value: Value) {
    let mut cur = obj;
    for (i, key) in path.iter().enumerate() {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == path.len() {
            map.insert(key.to_string(), value);
            return;
        }
        cur = map.entry(key.to_string()).or_insert_with(|| json!({}));
    }
}
