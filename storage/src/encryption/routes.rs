//! Which transformer a storage key uses. Storage sees keys, not resources: whoever installs a
//! resource tells the routes its storage path and name, and every key under that path then
//! uses the transformer the configuration gives the resource.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::config::EncryptionConfig;
use super::transformer::{DynTransformer, Identity};

pub struct Routes {
    config: EncryptionConfig,
    /// Transformers by storage path (`/secrets`, `/services/specs`), relative to the prefix.
    by_path: RwLock<HashMap<String, DynTransformer>>,
    /// Keys of no resource (allocation ranges) are never encrypted, nor read as encrypted.
    unrouted: DynTransformer,
}

impl Routes {
    pub fn new(config: EncryptionConfig) -> Self {
        Self {
            config,
            by_path: RwLock::default(),
            unrouted: Arc::new(Identity),
        }
    }

    /// Keys under `storage_path` belong to `resource` of `group`. The first resource routed to
    /// a path keeps it: resources served by two groups from one storage (core and
    /// events.k8s.io events) are encrypted as the first, the storage's owner.
    pub fn route(&self, storage_path: &str, group: &str, resource: &str) {
        let path = storage_path.trim_end_matches('/').to_string();
        let mut by_path = self.by_path.write().unwrap_or_else(|p| p.into_inner());
        by_path
            .entry(path)
            .or_insert_with(|| self.config.transformer_for(group, resource));
    }

    /// The transformer of a key relative to the storage prefix: that of the longest routed
    /// path the key lies under.
    pub fn for_key(&self, key: &str) -> DynTransformer {
        let by_path = self.by_path.read().unwrap_or_else(|p| p.into_inner());
        let mut found = None;
        for (at, _) in key.match_indices('/').skip(1) {
            if let Some(t) = by_path.get(&key[..at]) {
                found = Some(t);
            }
        }
        found.unwrap_or(&self.unrouted).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    const CONFIG: &str = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets, "*.apps"]
    providers:
      - secretbox:
          keys: [{name: k, secret: "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="}]
"#;

    fn routes() -> Routes {
        Routes::new(EncryptionConfig::parse(CONFIG.as_bytes(), "test").unwrap())
    }

    fn encrypts(routes: &Routes, key: &str) -> bool {
        let stored = routes
            .for_key(key)
            .transform_to_storage(b"{}", key.as_bytes())
            .unwrap();
        stored.starts_with(b"k8s:enc:")
    }

    #[test]
    fn keys_follow_the_routed_resource() {
        let r = routes();
        r.route("/secrets", "", "secrets");
        r.route("/configmaps", "", "configmaps");
        r.route("/deployments", "apps", "deployments");
        assert!(encrypts(&r, "/secrets/default/a"));
        assert!(encrypts(&r, "/deployments/default/web"));
        assert!(!encrypts(&r, "/configmaps/default/a"));
        // Not a resource, or a path that only shares a beginning with one.
        assert!(!encrypts(&r, "/ranges/serviceips"));
        assert!(!encrypts(&r, "/secretsx/default/a"));
    }

    #[test]
    fn the_longest_routed_path_wins_and_the_first_route_keeps_a_path() {
        let r = routes();
        r.route("/services", "", "secrets");
        r.route("/services/specs", "", "services");
        assert!(!encrypts(&r, "/services/specs/default/a"));
        assert!(encrypts(&r, "/services/other/a"));
        r.route("/services/specs", "", "secrets");
        assert!(!encrypts(&r, "/services/specs/default/a"));
    }

    #[test]
    fn unrouted_keys_refuse_encrypted_values() {
        let r = routes();
        let read = r
            .for_key("/ranges/x")
            .transform_from_storage(Bytes::from_static(b"k8s:enc:secretbox:v1:k:zz"), b"");
        assert!(read.is_err());
    }
}
