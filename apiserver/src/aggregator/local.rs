//! An API served in-process outside the catalogue (upstream: a delegate of the aggregator,
//! or an aggregated server run in the same process): its group-version, the discovery it
//! gives, and one handler for every request under `/apis/<group>/<version>/`.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use registry::auth::UserInfo;
use serde_json::Value;

use crate::api::request_info::RequestInfo;

/// One request to an in-process API, read and authorized.
pub struct LocalRequest {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub query: Vec<(String, String)>,
    pub body: Bytes,
    /// The reading authorization judged (None only without the filters).
    pub info: Option<RequestInfo>,
    pub user: Option<Arc<UserInfo>>,
}

#[async_trait]
pub trait LocalApi: Send + Sync {
    fn group(&self) -> &str;
    fn version(&self) -> &str;
    /// Its APIService's priorities.
    fn group_priority(&self) -> i64;
    fn version_priority(&self) -> i64;
    /// `/apis/<group>/<version>` (APIResourceList).
    fn resource_list(&self) -> Value;
    /// The APIVersionDiscovery of aggregated discovery.
    fn version_discovery(&self) -> Value;
    async fn serve(&self, request: LocalRequest) -> Response;
}
