//! All Stores of the server, one per catalogued resource, each over the watch cache of its
//! storage path (the state every cluster starts with is `bootstrap`'s).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use storage::{Cacher, CacherConfig, Interface};

use crate::admission::{plugins, Admission};
use crate::catalogue::{Catalogue, ResourceInfo};
use crate::field_validation::FieldSchemas;
use crate::service::{Repair, ServiceAllocator, ServiceNetwork};
use crate::store::Store;
use crate::strategy::{Strategy, StrategyConfig};

pub struct Registry {
    catalogue: Arc<Catalogue>,
    root: storage::KvStore,
    /// The admission chain every Store's writes pass.
    admission: Arc<Admission>,
    /// The namespaces' storage path (NamespaceLifecycle reads them).
    namespaces_path: String,
    cacher_config: CacherConfig,
    /// Watch caches by storage path: resources sharing a path share the cache.
    caches: RwLock<HashMap<String, Arc<Cacher>>>,
    /// A few dozen entries: a scan by reference beats building an owned key per request.
    stores: RwLock<Vec<Arc<Store>>>,
    /// Bumped whenever the set of Stores changes, so controllers that act on every resource
    /// (the garbage collector, the namespace controller) can follow resources added later.
    changes: tokio::sync::watch::Sender<u64>,
    /// The schemas writes are checked against (server-side field validation).
    fields: Arc<FieldSchemas>,
    /// What the server's flags decide about built-in kinds (the event ttl).
    strategies: StrategyConfig,
    /// The keys and rules of service account tokens, once the server gives them.
    pub(crate) service_account_tokens: std::sync::OnceLock<Arc<crate::serviceaccount::TokenConfig>>,
    /// The server's authorization chain, once it exists (admission plugins that ask it, as
    /// upstream's WantsAuthorizer plugins do).
    authorizer: Arc<std::sync::OnceLock<Arc<dyn crate::auth::Authorizer>>>,
}

impl Registry {
    /// Builds a Store for every catalogued resource, with the built-in kinds' defaults. Must
    /// run inside a tokio runtime (the watch caches start their feeds).
    pub fn new(
        root: storage::KvStore,
        catalogue: Arc<Catalogue>,
        cacher_config: CacherConfig,
    ) -> Arc<Self> {
        Self::with_config(root, catalogue, cacher_config, StrategyConfig::default())
    }

    /// As [`Registry::new`], the built-in kinds configured by `strategies`.
    pub fn with_config(
        root: storage::KvStore,
        catalogue: Arc<Catalogue>,
        cacher_config: CacherConfig,
        strategies: StrategyConfig,
    ) -> Arc<Self> {
        let namespaces_path = catalogue
            .lookup("", "v1", "namespaces")
            .map(|r| r.storage_path.clone())
            .unwrap_or_else(|| "/namespaces".into());
        // Before the cache first reads it, so encrypted values read back.
        root.route_resource(&namespaces_path, "", "namespaces");
        let namespaces = Arc::new(Cacher::new(
            root.clone(),
            &format!("{namespaces_path}/"),
            cacher_config.clone(),
        ));
        let registry = Arc::new(Self {
            admission: Arc::default(),
            namespaces_path: namespaces_path.clone(),
            catalogue,
            root,
            cacher_config,
            caches: RwLock::new(HashMap::from([(namespaces_path, namespaces)])),
            stores: RwLock::new(Vec::new()),
            changes: tokio::sync::watch::Sender::new(0),
            fields: Arc::default(),
            strategies,
            service_account_tokens: std::sync::OnceLock::new(),
            authorizer: Arc::default(),
        });
        // Create-only resources store nothing: no Store.
        for info in registry
            .catalogue
            .all()
            .iter()
            .filter(|i| !i.create_only && !i.computed)
        {
            registry.install(info.clone());
        }
        // After the Stores: plugins that write (ResourceQuota's usage) hold theirs.
        registry.set_admission_plugins(plugins::IN_PROCESS);
        registry
    }

    /// Admits every later write through `names`' plugins (upstream's names; those this
    /// server does not build are left out), run in upstream's order whatever the order given.
    pub fn set_admission_plugins(&self, names: &[&str]) {
        let chain = plugins::chain(self, names);
        tracing::info!(plugins = ?chain.names(), "admission chain");
        self.admission.set(chain);
    }

    /// Hands in a plugin the server builds (the webhooks), for chains set after it.
    pub fn provide_admission_plugin(
        &self,
        name: &'static str,
        plugin: Arc<dyn crate::admission::Plugin>,
    ) {
        self.admission.provide(name, plugin);
    }

    pub(crate) fn provided_admission_plugin(
        &self,
        name: &str,
    ) -> Option<Arc<dyn crate::admission::Plugin>> {
        self.admission.provided(name)
    }

    /// The admission plugins' configuration (`--admission-control-config-file`), for the
    /// chain set after it.
    pub fn set_admission_configuration(&self, configured: crate::admission::Configured) {
        self.admission.configure(configured);
    }

    pub(crate) fn admission_configured(&self) -> Arc<crate::admission::Configured> {
        self.admission.configured()
    }

    /// The admission plugins that run, in order.
    pub fn admission_plugins(&self) -> Vec<&'static str> {
        self.admission.chain().names()
    }

    /// The namespaces' watch cache.
    pub(crate) fn namespaces_cache(&self) -> Arc<dyn Interface> {
        self.cache_for(&self.namespaces_path)
    }

    /// Checks every write against the kinds' schemas in `api` from now on (upstream's
    /// fieldValidation); until then nothing is checked.
    pub fn set_schemas(&self, api: Arc<openapi::OpenApi>) {
        self.fields.set_source(api);
    }

    /// Checks writes of a custom resource's version against its schema from now on.
    pub fn describe_custom(&self, custom: openapi::CustomResource) {
        if let Some(source) = self.fields.source() {
            source.set_custom(custom);
        }
        self.fields.invalidate();
    }

    /// Forgets a custom resource version's schema.
    pub fn forget_custom(&self, group: &str, version: &str, plural: &str) {
        if let Some(source) = self.fields.source() {
            source.remove_custom(group, version, plural);
        }
        self.fields.invalidate();
    }

    /// The compiled schemas writes are checked against.
    pub fn field_schemas(&self) -> &Arc<FieldSchemas> {
        &self.fields
    }

    pub fn catalogue(&self) -> &Arc<Catalogue> {
        &self.catalogue
    }

    /// The storage root (keys under the configured prefix).
    pub fn root(&self) -> &storage::KvStore {
        &self.root
    }

    pub(crate) fn cache_for(&self, path: &str) -> Arc<Cacher> {
        if let Some(c) = self.caches.read().ok().and_then(|c| c.get(path).cloned()) {
            return c;
        }
        let mut caches = self.caches.write().unwrap_or_else(|p| p.into_inner());
        caches
            .entry(path.to_string())
            .or_insert_with(|| {
                Arc::new(Cacher::new(
                    self.root.clone(),
                    &format!("{path}/"),
                    self.cacher_config.clone(),
                ))
            })
            .clone()
    }

    /// Creates (or replaces) the Store of a resource.
    pub fn install(&self, info: Arc<ResourceInfo>) -> Arc<Store> {
        let strategy = (info.strategy)(&info, &self.strategies);
        self.install_with(info, strategy)
    }

    /// Creates (or replaces) the Store of a resource whose Strategy is not a built-in one.
    pub fn install_with(&self, info: Arc<ResourceInfo>, strategy: Box<dyn Strategy>) -> Arc<Store> {
        // Storage learns whose keys these are before the watch cache first reads them, so
        // they are encrypted at rest as configured for the resource.
        self.root
            .route_resource(&info.storage_path, &info.group, &info.plural);
        let cache: Arc<dyn Interface> = self.cache_for(&info.storage_path);
        let mut store = Store::new(info.clone(), strategy, cache, self.admission.clone())
            .with_field_schemas(self.fields.clone());
        for hooks in &info.store_hooks {
            store = store.with_hooks(hooks(self));
        }
        let store = Arc::new(store);
        let mut stores = self.stores.write().unwrap_or_else(|p| p.into_inner());
        stores.retain(|s| !serves(s, &info.group, &info.version, &info.plural));
        stores.push(store.clone());
        drop(stores);
        self.changes.send_modify(|n| *n += 1);
        store
    }

    /// What hands out Services' cluster IPs and node ports: its allocations live in storage,
    /// so every allocator over this storage agrees with this one.
    pub fn service_allocator(&self) -> Arc<ServiceAllocator> {
        let storage: Arc<dyn Interface> = Arc::new(self.root.clone());
        Arc::new(ServiceAllocator::new(storage, self.strategies.services))
    }

    /// What rebuilds the Services' range allocations from the Services (one per repairing
    /// controller: it remembers the leaks it has seen).
    pub fn service_repair(&self) -> Repair {
        let storage: Arc<dyn Interface> = Arc::new(self.root.clone());
        Repair::new(storage, self.strategies.services)
    }

    /// Where Services' cluster IPs and node ports come from.
    pub fn service_network(&self) -> ServiceNetwork {
        self.strategies.services
    }

    /// Stops serving group/version/plural (its stored objects stay where they are).
    pub fn uninstall(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Store>> {
        let mut stores = self.stores.write().unwrap_or_else(|p| p.into_inner());
        let at = stores
            .iter()
            .position(|s| serves(s, group, version, plural))?;
        let removed = stores.remove(at);
        drop(stores);
        self.changes.send_modify(|n| *n += 1);
        Some(removed)
    }

    /// Changes whenever a Store is installed or removed.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The Store serving group/version/plural.
    /// Gives admission the server's authorization chain; the first one given stays.
    pub fn set_authorizer(&self, authorizer: Arc<dyn crate::auth::Authorizer>) {
        if self.authorizer.set(authorizer).is_err() {
            tracing::warn!("the authorizer was already set; keeping the first");
        }
    }

    /// The server's authorization chain, once it is set.
    pub fn authorizer(&self) -> Option<Arc<dyn crate::auth::Authorizer>> {
        self.authorizer.get().cloned()
    }

    /// Where the authorization chain will be (plugins are built before it exists).
    pub(crate) fn authorizer_cell(
        &self,
    ) -> Arc<std::sync::OnceLock<Arc<dyn crate::auth::Authorizer>>> {
        self.authorizer.clone()
    }

    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Store>> {
        self.stores
            .read()
            .ok()?
            .iter()
            .find(|s| serves(s, group, version, plural))
            .cloned()
    }

    /// The Store of a resource the server always serves (pods, nodes...): its absence is the
    /// server's fault, an internal error.
    pub(crate) fn required_store(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> crate::Result<Arc<Store>> {
        self.store(group, version, plural)
            .ok_or_else(|| crate::RegistryError::Internal(format!("no storage for {plural}")))
    }

    /// Every Store, e.g. for controllers that act on all resources.
    pub fn stores(&self) -> Vec<Arc<Store>> {
        self.stores.read().map(|s| s.clone()).unwrap_or_default()
    }
}

fn serves(store: &Store, group: &str, version: &str, plural: &str) -> bool {
    store.info.plural == plural && store.info.group == group && store.info.version == version
}
