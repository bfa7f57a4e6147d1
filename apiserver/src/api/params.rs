//! Query parameters of resource requests, as upstream names them.

use registry::options::{
    DeleteOptions, DeleteOptionsWire, DryRun, FieldValidation, ListOptions, PreconditionsSpec,
    ResourceVersionMatch, WriteOptions,
};
use registry::RegistryError;

/// The query as key/value pairs (repeated keys kept, e.g. `dryRun`).
pub struct Params(pub Vec<(String, String)>);

impl Params {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A pod log request's options (`container`, `tailLines`, `previous`, `timestamps`).
    pub fn log(&self) -> Result<kubelet::logs::LogOptions, RegistryError> {
        let tail_lines = match self.get("tailLines") {
            None => None,
            Some(n) => Some(n.parse().map_err(|_| {
                RegistryError::BadRequest(format!("invalid value {n:?} for tailLines"))
            })?),
        };
        Ok(kubelet::logs::LogOptions {
            container: self.get("container").map(str::to_string),
            tail_lines,
            previous: self.flag("previous")?.unwrap_or(false),
            timestamps: self.flag("timestamps")?.unwrap_or(false),
        })
    }

    fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, RegistryError> {
        match self.get(key) {
            None => Ok(None),
            Some("" | "true" | "1") => Ok(Some(true)),
            Some("false" | "0") => Ok(Some(false)),
            Some(other) => Err(RegistryError::BadRequest(format!(
                "invalid value for {key}: {other:?}"
            ))),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>, RegistryError> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    RegistryError::BadRequest(format!("invalid value for {key}: {v:?}"))
                })
            })
            .transpose()
    }

    pub fn watch(&self) -> bool {
        matches!(self.get("watch"), Some("true" | "1"))
    }

    pub fn list(&self) -> Result<ListOptions, RegistryError> {
        Ok(ListOptions {
            label_selector: self.get("labelSelector").map(str::to_string),
            field_selector: self.get("fieldSelector").map(str::to_string),
            limit: self.int("limit")?.unwrap_or(0),
            continue_token: self.get("continue").map(str::to_string),
            resource_version: self.get("resourceVersion").map(str::to_string),
            resource_version_match: ResourceVersionMatch::parse(
                self.get("resourceVersionMatch").unwrap_or_default(),
            )?,
            allow_watch_bookmarks: self.flag("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: self.flag("sendInitialEvents")?,
        })
    }

    pub fn timeout_seconds(&self) -> Result<Option<i64>, RegistryError> {
        self.int("timeoutSeconds")
    }

    pub fn write(&self) -> Result<WriteOptions, RegistryError> {
        Ok(WriteOptions {
            dry_run: DryRun::parse(&self.all("dryRun"), "CreateOptions")?,
            field_manager: self.get("fieldManager").map(str::to_string),
            field_validation: FieldValidation::parse(self.get("fieldValidation"))?,
            ..Default::default()
        })
    }

    /// DeleteOptions from the body when there is one (as kubectl and curl send it), else
    /// from the query; validated here, so the registry gets them typed.
    pub fn delete(&self, body: Option<serde_json::Value>) -> Result<DeleteOptions, RegistryError> {
        let wire = match body {
            Some(body) => serde_json::from_value(body).map_err(|e| {
                RegistryError::BadRequest(format!(
                    "the body of the request was not valid DeleteOptions: {e}"
                ))
            })?,
            None => self.delete_query()?,
        };
        DeleteOptions::parse(wire)
    }

    fn delete_query(&self) -> Result<DeleteOptionsWire, RegistryError> {
        let uid = self.get("preconditions.uid");
        let rv = self.get("preconditions.resourceVersion");
        let preconditions = (uid.is_some() || rv.is_some()).then(|| PreconditionsSpec {
            uid: uid.map(str::to_string),
            resource_version: rv.map(str::to_string),
        });
        Ok(DeleteOptionsWire {
            grace_period_seconds: self.int("gracePeriodSeconds")?,
            orphan_dependents: self.flag("orphanDependents")?,
            propagation_policy: self.get("propagationPolicy").map(str::to_string),
            dry_run: self.all("dryRun"),
            preconditions,
        })
    }
}
