//! API Priority and Fairness' configuration producer (upstream's
//! priority-and-fairness-config-producer post-start hook and its ensurer): at start and every
//! minute after, the mandatory levels and schemas are created or put back as they must be,
//! the suggested ones are created and kept current while their auto-update annotation (or,
//! without one, an untouched generation) says so, and objects the server once suggested but
//! no longer does are deleted unless someone took them over.

use std::time::Duration;

use serde_json::{json, Value};
use tracing::{info, warn};

use crate::error::{RegistryError, Result};
use crate::options::{DeleteOptions, ListOptions, PreconditionsSpec, WriteOptions};
use crate::store::Store;
use crate::strategy::flowcontrol::configuration::{
    self, specs_equal, Configuration, AUTO_UPDATE_ANNOTATION, EXEMPT,
};
use crate::strategy::flowcontrol::set_level_defaults;
use crate::{object, Registry, Subresource};

/// The field manager of the producer's writes, as upstream names it.
const FIELD_MANAGER: &str = "api-priority-and-fairness-config-producer-v1";
/// How often the configuration is put back as it should be.
pub const RESYNC: Duration = Duration::from_secs(60);
const GROUP: &str = "flowcontrol.apiserver.k8s.io";

impl Registry {
    /// One pass of the producer: suggested, then mandatory (levels before the schemas that
    /// name them), then what is no longer wanted.
    pub async fn ensure_flow_control(&self) -> Result<()> {
        let (Some(levels), Some(schemas)) = (
            self.store(GROUP, "v1", "prioritylevelconfigurations"),
            self.store(GROUP, "v1", "flowschemas"),
        ) else {
            return Ok(());
        };
        let suggested = configuration::suggested();
        let mandatory = configuration::mandatory();
        for (config, always) in [(&suggested, false), (&mandatory, true)] {
            for level in &config.priority_levels {
                ensure(&levels, level, always).await?;
            }
            for schema in &config.flow_schemas {
                ensure(&schemas, schema, always).await?;
            }
        }
        let wanted = |pick: fn(&Configuration) -> &Vec<Value>| -> Vec<String> {
            [&suggested, &mandatory]
                .into_iter()
                .flat_map(pick)
                .map(|o| object::name(o).to_string())
                .collect()
        };
        remove_unwanted(&schemas, &wanted(|c| &c.flow_schemas)).await?;
        remove_unwanted(&levels, &wanted(|c| &c.priority_levels)).await?;
        Ok(())
    }

    /// The producer's periodic pass, forever (the caller stops it with the server); a
    /// failed pass is logged and tried again at the next tick.
    pub async fn keep_flow_control(&self) {
        let mut ticks = tokio::time::interval(RESYNC);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if let Err(e) = self.ensure_flow_control().await {
                warn!(error = %e, "APF bootstrap ensurer ran into an error, will retry later");
            }
        }
    }
}

/// Go's strconv.ParseBool.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn auto_update(obj: &Value) -> Option<bool> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTO_UPDATE_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(parse_bool)
}

/// Whether the stored spec is the one the server wants (upstream's specEqualish): the wanted
/// one defaulted, and the exempt level's own tunables as the stored object has them.
fn spec_matches(current: &Value, wanted: &Value) -> bool {
    let mut want = wanted["spec"].clone();
    if current["kind"] == "PriorityLevelConfiguration"
        || wanted["kind"] == "PriorityLevelConfiguration"
    {
        set_level_defaults(&mut want);
        if object::name(wanted) == EXEMPT {
            let Some(exempt) = current.pointer("/spec/exempt").filter(|e| !e.is_null()) else {
                return false;
            };
            want["exempt"] = exempt.clone();
        }
    }
    specs_equal(&current["spec"], &want)
}

/// Creates `wanted` when missing; otherwise updates its spec and annotation as the
/// strategy (mandatory: always; suggested: as the object says) wants them.
async fn ensure(store: &Store, wanted: &Value, mandatory: bool) -> Result<()> {
    let name = object::name(wanted);
    let write = WriteOptions::by(FIELD_MANAGER);
    let current = match store.get(None, name, &ListOptions::default()).await {
        Ok(current) => current,
        Err(RegistryError::NotFound { .. }) => {
            return match store.create(None, wanted.clone(), &write).await {
                Ok(_) => {
                    info!(kind = %wanted["kind"], name, "created APF configuration object");
                    Ok(())
                }
                Err(RegistryError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    // A suggested object keeps what its annotation says, or (with none readable) is the
    // server's while nobody changed its spec.
    let auto = mandatory
        || auto_update(&current)
            .unwrap_or_else(|| current.pointer("/metadata/generation") == Some(&json!(1)));
    let annotate = auto_update(&current) != Some(auto);
    let replace_spec = auto && !spec_matches(&current, wanted);
    if !annotate && !replace_spec {
        return Ok(());
    }
    let mut revised = current.clone();
    if replace_spec {
        revised["spec"] = wanted["spec"].clone();
    }
    if annotate {
        object::meta_mut(&mut revised)
            .entry("annotations")
            .or_insert_with(|| json!({}))[AUTO_UPDATE_ANNOTATION] = json!(auto.to_string());
    }
    match store
        .update(None, name, revised, Subresource::Main, &write)
        .await
    {
        Ok(_) => {
            info!(kind = %wanted["kind"], name, replace_spec, "updated APF configuration object");
            Ok(())
        }
        // Someone wrote it meanwhile: the next pass looks again.
        Err(RegistryError::Conflict { .. } | RegistryError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the objects that say the server keeps them but that it no longer wants.
async fn remove_unwanted(store: &Store, wanted: &[String]) -> Result<()> {
    let list = store.list(None, &ListOptions::default()).await?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    for item in items {
        let name = object::name(&item);
        if wanted.iter().any(|w| w == name) || auto_update(&item) != Some(true) {
            continue;
        }
        let opts = DeleteOptions {
            preconditions: Some(PreconditionsSpec {
                resource_version: item
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        };
        match store.delete(None, name, opts).await {
            Ok(_) => {
                info!(kind = %item["kind"], name, "deleted APF configuration object no longer suggested")
            }
            Err(RegistryError::Conflict { .. } | RegistryError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
