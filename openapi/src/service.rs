//! `OpenApi`: the documents of what the server currently serves, built lazily and cached
//! until what they describe changes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use serde_json::Value;

use crate::builtin::builtin;
use crate::document::Document;
use crate::gvk::Gvk;
use crate::names::{custom_definition, group_version_path, parse_group_version_path};
use crate::operations::{paths, PathItem, Target};
use crate::refs::{resolve, Layered};
use crate::spec::{CustomResource, ResourceSpec};
use crate::{custom, v2, v3};

/// The OpenAPI documents of a server. Thread-safe; reads of a built document are a clone of
/// shared bytes. Documents are built on first request and rebuilt only after a change to
/// the resources they describe.
pub struct OpenApi {
    info_version: String,
    state: RwLock<State>,
}

/// (group, version, plural)
type CustomKey = (String, String, String);

struct State {
    /// Bumped by every change, so a document built from older inputs is not cached.
    generation: u64,
    builtin: Vec<ResourceSpec>,
    custom: BTreeMap<CustomKey, CustomResource>,
    custom_definitions: BTreeMap<String, Value>,
    custom_kinds: BTreeMap<Gvk, String>,
    cache: Cache,
}

#[derive(Default)]
struct Cache {
    index: Option<Document>,
    /// JSON and protobuf, built together from one document.
    v2: Option<(Document, Document)>,
    /// By group-version path ("apis/apps/v1").
    v3: BTreeMap<String, Document>,
}

impl OpenApi {
    /// Documents describing `resources`, the built-in resources the server serves (their
    /// schemas come from the Kubernetes API definitions; one without a known kind is left
    /// out).
    pub fn new(resources: Vec<ResourceSpec>) -> OpenApi {
        OpenApi {
            info_version: "unversioned".to_string(),
            state: RwLock::new(State {
                generation: 0,
                builtin: resources,
                custom: BTreeMap::new(),
                custom_definitions: BTreeMap::new(),
                custom_kinds: BTreeMap::new(),
                cache: Cache::default(),
            }),
        }
    }

    /// The documents' `info.version` (kube-apiserver puts its version there, "v1.35.0").
    pub fn with_info_version(mut self, version: &str) -> OpenApi {
        self.info_version = version.to_string();
        self
    }

    /// Replaces the set of built-in resources served.
    pub fn set_resources(&self, resources: Vec<ResourceSpec>) {
        let mut state = self.write();
        state.builtin = resources;
        state.changed(None);
    }

    /// Adds or replaces a custom resource's version (keyed by group, version and plural).
    pub fn set_custom(&self, custom: CustomResource) {
        let r = &custom.resource;
        let key = (r.group.clone(), r.version.clone(), r.plural.clone());
        let gv = (r.group.clone(), r.version.clone());
        let mut state = self.write();
        if state.custom.get(&key) == Some(&custom) {
            return;
        }
        state.custom.insert(key, custom);
        state.rebuild_custom();
        state.changed(Some(gv));
    }

    /// Stops describing a custom resource's version; false when it was not described.
    pub fn remove_custom(&self, group: &str, version: &str, plural: &str) -> bool {
        let key = (group.to_string(), version.to_string(), plural.to_string());
        let mut state = self.write();
        if state.custom.remove(&key).is_none() {
            return false;
        }
        state.rebuild_custom();
        state.changed(Some((key.0, key.1)));
        true
    }

    /// `/openapi/v3`: the index naming each group-version's document with its hash.
    pub fn v3_index(&self) -> Document {
        let (documents, generation) = {
            let state = self.read();
            if let Some(index) = &state.cache.index {
                return index.clone();
            }
            let mut documents = BTreeMap::new();
            for (group, version) in state.group_versions() {
                let path = group_version_path(&group, &version);
                let document = match state.cache.v3.get(&path) {
                    Some(document) => document.clone(),
                    None => match state.build_v3(&group, &version, &self.info_version) {
                        Some(document) => document,
                        None => continue,
                    },
                };
                documents.insert(path, document);
            }
            (documents, state.generation)
        };
        let hashes = documents
            .iter()
            .map(|(path, document)| (path.clone(), document.hash().to_string()))
            .collect();
        let index = Document::new(&v3::index(&hashes));
        self.store(generation, |cache| {
            cache.v3.extend(documents);
            cache.index = Some(index.clone());
        });
        index
    }

    /// `/openapi/v3/<path>` for a group-version path ("api/v1", "apis/apps/v1", with or
    /// without slashes around it); `None` when the server serves no such group-version.
    pub fn v3_group_version(&self, path: &str) -> Option<Document> {
        let (group, version) = parse_group_version_path(path)?;
        let path = group_version_path(&group, &version);
        let (document, generation) = {
            let state = self.read();
            if let Some(document) = state.cache.v3.get(&path) {
                return Some(document.clone());
            }
            (
                state.build_v3(&group, &version, &self.info_version)?,
                state.generation,
            )
        };
        self.store(generation, |cache| {
            cache.v3.insert(path, document.clone());
        });
        Some(document)
    }

    /// `/openapi/v2`: one Swagger 2.0 document of everything served, as JSON.
    pub fn v2(&self) -> Document {
        self.v2_both().0
    }

    /// `/openapi/v2` as protobuf (gnostic's openapi_v2.Document), for a request accepting
    /// `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (client-go and kubectl
    /// ask for nothing else). Its hash differs from the JSON form's.
    pub fn v2_protobuf(&self) -> Document {
        self.v2_both().1
    }

    fn v2_both(&self) -> (Document, Document) {
        let (documents, generation) = {
            let state = self.read();
            if let Some(documents) = &state.cache.v2 {
                return documents.clone();
            }
            let group_versions: BTreeSet<_> = state.group_versions().into_iter().collect();
            let paths: Vec<PathItem> = group_versions
                .iter()
                .flat_map(|(group, version)| state.paths(group, version))
                .collect();
            let value = v2::document(
                &paths,
                &state.definitions(),
                &group_versions,
                &self.info_version,
            );
            let protobuf = Document::from_bytes(v2::protobuf::document(&value));
            ((Document::new(&value), protobuf), state.generation)
        };
        self.store(generation, |cache| cache.v2 = Some(documents.clone()));
        documents
    }

    /// The schema of a kind (built-in, served or not, or a described custom resource) with
    /// every reference inlined, for validating objects: unknown fields, types, list and
    /// map semantics. A recursive reference is cut to an object keeping any field.
    pub fn schema_for(&self, group: &str, version: &str, kind: &str) -> Option<Arc<Value>> {
        // Not cached: its callers (field validation, server-side apply) compile it into
        // their own smaller form once per kind, and the inlined document (ObjectMeta and
        // the rest repeated in every kind) would stay resident beside it.
        let gvk = Gvk::new(group, version, kind);
        let state = self.read();
        let name = state
            .custom_kinds
            .get(&gvk)
            .or_else(|| builtin().kinds.get(&gvk))?;
        Some(Arc::new(resolve(name, &state.definitions())?))
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves the state whole (every change is
        // made before the cache is touched): keep serving it.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Caches what was built from the state at `generation`, unless it changed meanwhile.
    fn store(&self, generation: u64, update: impl FnOnce(&mut Cache)) {
        let mut state = self.write();
        if state.generation == generation {
            update(&mut state.cache);
        }
    }
}

impl State {
    fn definitions(&self) -> Layered<'_> {
        Layered {
            custom: &self.custom_definitions,
            builtin: &builtin().definitions,
        }
    }

    fn group_versions(&self) -> BTreeSet<(String, String)> {
        self.builtin
            .iter()
            .chain(self.custom.values().map(|c| &c.resource))
            .map(|r| (r.group.clone(), r.version.clone()))
            .collect()
    }

    /// The paths of every resource of a group-version.
    fn paths(&self, group: &str, version: &str) -> Vec<PathItem> {
        let kinds = &builtin().kinds;
        let mut out = Vec::new();
        for r in self
            .builtin
            .iter()
            .filter(|r| r.group == group && r.version == version)
        {
            let Some(definition) = kinds.get(&Gvk::new(group, version, &r.kind)) else {
                continue;
            };
            let list = kinds.get(&Gvk::new(group, version, &format!("{}List", r.kind)));
            out.extend(paths(&Target {
                resource: r,
                definition,
                list_definition: list.map(String::as_str),
                builtin: true,
            }));
        }
        for c in self.custom.values() {
            let r = &c.resource;
            if r.group != group || r.version != version {
                continue;
            }
            let definition = custom_definition(group, version, &r.kind);
            let list = custom_definition(group, version, &format!("{}List", r.kind));
            out.extend(paths(&Target {
                resource: r,
                definition: &definition,
                list_definition: Some(&list),
                builtin: false,
            }));
        }
        out
    }

    fn build_v3(&self, group: &str, version: &str, info_version: &str) -> Option<Document> {
        let paths = self.paths(group, version);
        if paths.is_empty() {
            return None;
        }
        // Meta types name the group-versions they belong to: the built-in ones and this one,
        // so a custom resource's change leaves the other documents (and their hashes) alone.
        let mut group_versions: BTreeSet<_> = self
            .builtin
            .iter()
            .map(|r| (r.group.clone(), r.version.clone()))
            .collect();
        group_versions.insert((group.to_string(), version.to_string()));
        let value = v3::document(&paths, &self.definitions(), &group_versions, info_version);
        Some(Document::new(&value))
    }

    fn rebuild_custom(&mut self) {
        self.custom_definitions.clear();
        self.custom_kinds.clear();
        for c in self.custom.values() {
            let r = &c.resource;
            let [(name, schema), (list_name, list)] = custom::definitions(c);
            let list_kind = format!("{}List", r.kind);
            self.custom_kinds
                .insert(Gvk::new(&r.group, &r.version, &r.kind), name.clone());
            self.custom_kinds.insert(
                Gvk::new(&r.group, &r.version, &list_kind),
                list_name.clone(),
            );
            self.custom_definitions.insert(name, schema);
            self.custom_definitions.insert(list_name, list);
        }
    }

    /// Forgets what the change touched: one group-version's documents (with the index and
    /// v2, which include them), or everything.
    fn changed(&mut self, group_version: Option<(String, String)>) {
        self.generation += 1;
        let cache = &mut self.cache;
        cache.index = None;
        cache.v2 = None;
        match group_version {
            Some((group, version)) => {
                cache.v3.remove(&group_version_path(&group, &version));
            }
            None => cache.v3.clear(),
        }
    }
}
