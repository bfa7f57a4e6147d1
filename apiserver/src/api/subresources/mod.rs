//! The subresources' handlers, one file each, found by the name a catalogue entry registers a
//! subresource under ([`registry::catalogue::SubresourceInfo`]): what a request to
//! `<resource>/<name>/<subresource>` does once the generic checks passed (the subresource is
//! registered, the verb is one of its verbs, the write options parse).

mod attach;
mod binding;
mod create_permission;
mod dial;
mod eviction;
mod exec;
mod kubelet_location;
mod log;
mod node_proxy;
mod parent;
mod pod_proxy;
mod pod_target;
mod portforward;
mod proxy;
pub(crate) mod reverse_proxy;
mod scale;
mod service_proxy;
mod stream_options;
mod streaming;
mod token;
pub(crate) mod upgrade;
mod websocket;

pub(super) use upgrade::Upgrade;

use async_trait::async_trait;
use axum::response::Response;
use registry::options::WriteOptions;
use registry::{RegistryError, Store, Subresource, Verb};

use super::handlers::Request;
use super::response::Format;

/// One request to a subresource.
pub(super) struct Call<'a> {
    /// The parent resource's Store.
    pub store: &'a Store,
    pub req: &'a Request,
    pub verb: Verb,
    pub namespace: Option<&'a str>,
    /// The parent object's name.
    pub name: &'a str,
    pub format: Format,
    /// Whether JSON answers are indented (`?pretty`, or a client people type at).
    pub pretty: bool,
    /// The request's write options (with its patch type, for a patch).
    pub write: WriteOptions,
}

impl Call<'_> {
    /// The request's body as an object of `kind`, its strict-decoding problems kept in
    /// `write`.
    pub fn body(&mut self, kind: &str) -> Result<serde_json::Value, RegistryError> {
        super::handlers::body(self.req, &mut self.write, kind)
    }
}

/// What a subresource does with a request. Called only with one of the verbs the subresource
/// is registered with: a handler checks the verb only to tell apart the verbs it has.
#[async_trait]
pub(super) trait Handler: Send + Sync {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError>;
}

/// Every subresource handler, by the name subresources are registered under.
static HANDLERS: [(&str, &dyn Handler); 14] = [
    ("status", &parent::InPlace(Subresource::Status)),
    ("approval", &parent::InPlace(Subresource::Approval)),
    (
        "ephemeralcontainers",
        &parent::InPlace(Subresource::EphemeralContainers),
    ),
    ("resize", &parent::InPlace(Subresource::Resize)),
    ("finalize", &parent::InPlace(Subresource::Finalize)),
    ("scale", &scale::Scale),
    ("binding", &binding::Binding),
    ("eviction", &eviction::Eviction),
    ("token", &token::Token),
    ("log", &log::Log),
    ("proxy", &proxy::Proxy),
    ("attach", &attach::Attach),
    ("exec", &exec::Exec),
    ("portforward", &portforward::PortForward),
];

/// The handler of the subresource registered as `name`.
pub(super) fn handler(name: &str) -> Option<&'static dyn Handler> {
    HANDLERS
        .iter()
        .find(|(registered, _)| *registered == name)
        .map(|(_, handler)| *handler)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_registered_subresource_has_a_handler() {
        for info in registry::Catalogue::builtin().all().iter() {
            for sub in &info.subresources {
                assert!(
                    super::handler(sub.name).is_some(),
                    "{}/{}",
                    info.plural,
                    sub.name
                );
            }
        }
    }
}
