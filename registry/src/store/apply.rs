//! Server-side apply (PATCH with `application/apply-patch+yaml`, upstream's applyPatcher): the
//! configuration is merged into the live object under the kind's schema by its manager's
//! rights, creating the object when it is absent, then written through the ordinary create or
//! update path with the managedFields the merge produced.

use serde_json::{json, Value};
use storage::{ReadRevision, StorageError};

use super::managed::{Endpoint, Tracking};
use super::update::{How, Subresource};
use super::Store;
use crate::error::{RegistryError, Result};
use crate::go_fmt;
use crate::object::{self, Object};
use crate::options::WriteOptions;

/// Rounds of an apply that found the object absent and then lost the create to another.
const CREATE_RACES: usize = 3;

/// The configuration in an apply body: a YAML (or JSON) object.
pub fn parse_config(body: &[u8]) -> Result<Value> {
    // kubectl and client-go send JSON (which is YAML): read it as such when it parses, at a
    // fraction of a YAML parser's cost.
    let json = match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => serde_json::from_slice::<Value>(body).ok(),
        _ => None,
    };
    let value: Value = match json {
        Some(value) => value,
        None => serde_yaml_ng::from_slice(body)
            .map_err(|e| RegistryError::BadRequest(format!("error decoding YAML: {e}")))?,
    };
    if !value.is_object() {
        return Err(RegistryError::BadRequest(format!(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_fmt::json_kind(&value)
        )));
    }
    Ok(value)
}

impl Store {
    /// The configuration's own checks: it must name this resource's group, version and
    /// kind (upstream's versionCheckManager), and may not carry managedFields.
    fn check_config(
        &self,
        config: &Value,
        expected_version: &str,
        expected_kind: &str,
    ) -> Result<()> {
        let version = config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = config
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if version != expected_version || kind != expected_kind {
            // A group-version-kind as Go prints it: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
            let (group, version) = version.rsplit_once('/').unwrap_or(("", version));
            return Err(RegistryError::BadRequest(format!(
                "invalid object type: {group}/{version}, Kind={kind}"
            )));
        }
        if config.pointer("/metadata/managedFields").is_some() {
            return Err(RegistryError::BadRequest(
                "metadata.managedFields must be nil".into(),
            ));
        }
        Ok(())
    }

    /// Applies `body` by `opts.field_manager` to the object (`Main`) or its status, taking
    /// conflicting fields when `opts.force`; true when the apply created the object.
    pub async fn apply(
        &self,
        namespace: Option<&str>,
        name: &str,
        body: &[u8],
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<(Object, bool)> {
        let force = opts.force;
        let config = parse_config(body)?;
        self.check_config(&config, &self.info.api_version(), &self.info.kind)?;
        let mut checked = config.clone();
        self.check_fields(&mut checked, opts, true)?;
        let manager = self.manager(opts).to_string();
        let endpoint = Endpoint::of(sub);
        let how = How {
            sub,
            endpoint,
            tracking: Tracking::Applied,
        };
        let namespace = self.scope(namespace)?;
        match object::name(&config) {
            "" => {}
            given if given == name => {}
            given => {
                return Err(RegistryError::BadRequest(format!(
                    "the name of the object ({given}) does not match the name on the URL ({name})"
                )))
            }
        }
        let given_ns = object::namespace(&config);
        if namespace.is_some_and(|ns| !given_ns.is_empty() && given_ns != ns) {
            return Err(RegistryError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        let key = self.key(namespace, name);
        for _ in 0..CREATE_RACES {
            let exists = match self.storage.get(&key, ReadRevision::Latest).await {
                Ok(_) => true,
                Err(StorageError::NotFound { .. }) => false,
                Err(e) => return Err(self.storage_err(name)(e)),
            };
            if !exists {
                if sub != Subresource::Main {
                    return Err(RegistryError::not_found(
                        &self.info.qualified_resource(),
                        name,
                    ));
                }
                let mut obj = self
                    .field_manager(endpoint, &[&config])
                    .apply(None, &config, &manager, force)?;
                let meta = object::meta_mut(&mut obj);
                meta.insert("name".into(), json!(name));
                if let Some(ns) = namespace {
                    meta.insert("namespace".into(), json!(ns));
                }
                match self
                    .create_as(namespace, obj, opts, Tracking::Applied)
                    .await
                {
                    Err(RegistryError::AlreadyExists { .. }) => continue,
                    created => return created.map(|obj| (obj, true)),
                }
            }
            let written = self
                .write_as(namespace, name, how, opts, |current| {
                    let current = self.existing(current, name)?;
                    self.field_manager(endpoint, &[current, &config]).apply(
                        Some(current),
                        &config,
                        &manager,
                        force,
                    )
                })
                .await;
            match written {
                // Deleted since it was seen: apply creates it.
                Err(RegistryError::NotFound { .. }) => continue,
                other => return other,
            }
        }
        Err(RegistryError::conflict(
            &self.info.qualified_resource(),
            name,
            "the object was created and deleted concurrently; please apply again",
        ))
    }

    /// Applies a Scale configuration through the scale subresource: its replicas are
    /// applied to the object's replicas path, and nothing else.
    pub(crate) async fn apply_scale(
        &self,
        namespace: Option<&str>,
        name: &str,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Object> {
        let force = opts.force;
        let scale = parse_config(body)?;
        self.check_config(&scale, "autoscaling/v1", "Scale")?;
        let mut checked = scale.clone();
        self.check_scale_fields(&mut checked, opts, true)?;
        let mut config = json!({
            "apiVersion": self.info.api_version(),
            "kind": self.info.kind,
            "metadata": {"name": name},
        });
        if let Some(replicas) = scale.pointer("/spec/replicas") {
            let path = self.scale_replicas_path();
            let steps: Vec<&str> = path.iter().map(String::as_str).collect();
            super::subresources::set_at(&mut config, &steps, replicas.clone());
        }
        let manager = self.manager(opts).to_string();
        let how = How {
            sub: Subresource::Main,
            endpoint: Endpoint::Scale,
            tracking: Tracking::Applied,
        };
        let (obj, _) = self
            .write_as(namespace, name, how, opts, |current| {
                let current = self.existing(current, name)?;
                self.field_manager(Endpoint::Scale, &[current, &config])
                    .apply(Some(current), &config, &manager, force)
            })
            .await?;
        Ok(obj)
    }
}
