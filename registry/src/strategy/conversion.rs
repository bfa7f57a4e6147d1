//! Objects kept in storage in another shape than a resource serves them (upstream converts
//! through the internal type between the storage version and the request's): several versions
//! of a custom resource share one storage, and core/v1 and events.k8s.io/v1 events are one
//! storage shown in two shapes. The Store applies a resource's conversion on every way in and
//! out: reads, lists, watches, selectors, writes and their responses.

use serde_json::Value;

pub trait Conversion: Send + Sync {
    /// A stored object in the shape the resource serves.
    fn to_served(&self, obj: &mut Value);

    /// A served object in the shape it is stored in.
    fn to_stored(&self, obj: &mut Value);
}

/// Versions that differ only in apiVersion (custom resources with conversion strategy None):
/// read objects show the version asked for; written ones are stored as sent.
pub struct ApiVersion(pub String);

impl Conversion for ApiVersion {
    fn to_served(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".into(), Value::from(self.0.as_str()));
        }
    }

    fn to_stored(&self, _obj: &mut Value) {}
}

/// A conversion made elsewhere (a CustomResourceDefinition's conversion webhook): it may fail
/// and takes time, so the Store asks it once per request for all the objects it has (one list
/// page, one watch event, one written object) and hands its errors to the client.
#[async_trait::async_trait]
pub trait Converter: Send + Sync {
    /// The apiVersion written objects are stored in.
    fn storage_api_version(&self) -> &str;

    /// `objects` (each in the version it carries) in `api_version`, in the same order; `list`
    /// when they are a list's items (errors name the list's kind then, as upstream's do).
    /// Objects already in it are not sent; when none needs converting nothing is called.
    async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
        list: bool,
    ) -> crate::error::Result<Vec<Value>>;
}
