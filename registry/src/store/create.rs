//! Create (upstream's Store.Create with BeforeCreate): names, server-set metadata, defaults,
//! mutating admission, validation, validating admission, then one conditional write.

use serde_json::json;
use storage::StorageError;
use tracing::debug;

use super::hooks::GuardedWrite;
use super::managed::{Endpoint, Tracking};
use super::update::{How, Subresource};
use super::{stamp, Store};
use crate::admission::{Attributes, Operation};
use crate::error::{Cause, RegistryError, Result};
use crate::object::{self, Object};
use crate::options::WriteOptions;
use crate::validation::names::generate_name;

/// Tries of a generateName create before giving up on collisions.
const GENERATE_NAME_TRIES: usize = 8;

impl Store {
    pub async fn create(
        &self,
        namespace: Option<&str>,
        obj: Object,
        opts: &WriteOptions,
    ) -> Result<Object> {
        self.create_as(namespace, obj, opts, Tracking::Update).await
    }

    /// A create whose managedFields come about as `tracking` says.
    pub(crate) async fn create_as(
        &self,
        namespace: Option<&str>,
        mut obj: Object,
        opts: &WriteOptions,
        tracking: Tracking,
    ) -> Result<Object> {
        let dry_run = opts.dry_run.is_all();
        let namespace = self.scope(namespace)?;
        if let Some(why) = self.strategy.refuses_create() {
            return Err(RegistryError::MethodNotAllowed(why));
        }
        self.check_kind(&mut obj)?;
        self.check_fields(&mut obj, opts, false)?;
        self.check_namespace(&mut obj, namespace)?;
        let generate = object::str_field(&obj, "generateName")
            .filter(|g| !g.is_empty())
            .map(str::to_string);
        let generated = object::name(&obj).is_empty() && generate.is_some();
        if object::name(&obj).is_empty() {
            match generate.as_deref().filter(|g| !g.is_empty()) {
                Some(base) => {
                    object::meta_mut(&mut obj).insert("name".into(), json!(generate_name(base)));
                }
                None => {
                    return Err(RegistryError::invalid(
                        &self.info.qualified_kind(),
                        "",
                        vec![Cause {
                            kind: "FieldValueRequired".into(),
                            message: "Required value: name or generateName is required".into(),
                            field: "metadata.name".into(),
                        }],
                    ))
                }
            }
        }
        let requested = object::meta_mut(&mut obj).remove("managedFields");
        self.prepare_create_meta(&mut obj);
        self.strategy.prepare_for_create(&mut obj);
        self.strategy
            .record_requester(&mut obj, opts.user.as_deref());
        let how = How {
            sub: Subresource::Main,
            endpoint: Endpoint::Main,
            tracking,
        };
        self.finish_tracking(how, opts, None, &mut obj, requested);
        // Admission names a generated object by its generateName, as upstream's runs before
        // the name is drawn.
        let admitted_name = match (generated, &generate) {
            (true, Some(base)) => base.clone(),
            _ => object::name(&obj).to_string(),
        };
        let chain = self.admission.chain();
        let attrs = Attributes {
            info: &self.info,
            operation: Operation::Create,
            subresource: "",
            namespace,
            name: &admitted_name,
            old: None,
            user: opts.user.as_ref(),
            dry_run,
        };
        chain.admit(&attrs, Some(&mut obj)).await?;
        let name = object::name(&obj).to_string();
        let mut causes = self.validate_meta(&obj);
        causes.extend(self.strategy.validate(&obj));
        self.invalid_if_any(&name, causes)?;
        self.guard_write(&GuardedWrite {
            namespace,
            path_name: "",
            new: &obj,
            old: None,
            user: opts.user.as_ref(),
        })?;
        chain.validate(&attrs, Some(&obj)).await?;
        crate::warning::finalizers(object::finalizers(&obj).iter().map(String::as_str));
        let mut hooked = Vec::with_capacity(self.hooks.len());
        for hooks in &self.hooks {
            match hooks.begin_create(&mut obj, dry_run).await {
                Ok(finish) => hooked.push(finish),
                Err(e) => return super::finish(hooked, Err(e)).await,
            }
        }
        if dry_run {
            return super::finish(hooked, Ok(obj)).await;
        }
        let created = self.store_new(namespace, obj, generate, generated).await;
        super::finish(hooked, created).await
    }

    /// The write of a create, drawing another generated name while they collide.
    async fn store_new(
        &self,
        namespace: Option<&str>,
        mut obj: Object,
        generate: Option<String>,
        generated: bool,
    ) -> Result<Object> {
        let mut tries = 0;
        loop {
            let name = object::name(&obj).to_string();
            let key = self.key(namespace, &name);
            let bytes = self.encode_converted(&mut obj).await?;
            match self.storage.create_with_ttl(&key, bytes, self.ttl).await {
                Ok(kv) => {
                    stamp(&mut obj, kv.mod_revision);
                    debug!(resource = %self.info.qualified_resource(), namespace, name, "created");
                    return Ok(obj);
                }
                // A generated name that collided: draw another, as upstream retries.
                Err(StorageError::AlreadyExists { .. })
                    if generated && tries < GENERATE_NAME_TRIES =>
                {
                    tries += 1;
                    let base = generate.clone().unwrap_or_default();
                    object::meta_mut(&mut obj).insert("name".into(), json!(generate_name(&base)));
                }
                Err(e) => return Err(self.storage_err(&name)(e)),
            }
        }
    }
}
