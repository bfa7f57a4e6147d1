//! Create-only resources that store nothing (upstream's REST storage without a store: the
//! authentication and authorization reviews). They are catalogue entries marked
//! `create_only`, served through one path: a POST to the collection is answered 201 with what
//! the resource's [`Creater`] makes of the request; any other method is 405.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use registry::auth::UserInfo;
use registry::RegistryError;
use serde_json::Value;

use super::{response, MAX_BODY};

/// A create, as a create-only resource sees it.
pub struct Creation<'a> {
    /// The namespace of the URL (namespaced resources only).
    pub namespace: Option<&'a str>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// Who makes the request.
    pub user: Option<&'a UserInfo>,
}

/// Answers the creates of one create-only resource (upstream's `rest.Creater`).
#[async_trait::async_trait]
pub trait Creater: Send + Sync {
    /// The object answered, 201 Created.
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError>;
}

/// The create-only resources' Creaters, by group and kind.
#[derive(Clone, Default)]
pub struct Creaters(Arc<HashMap<(String, String), Arc<dyn Creater>>>);

impl Creaters {
    pub fn new<'a>(
        creaters: impl IntoIterator<Item = (&'a str, &'a str, Arc<dyn Creater>)>,
    ) -> Self {
        let map = creaters
            .into_iter()
            .map(|(group, kind, creater)| ((group.to_string(), kind.to_string()), creater))
            .collect();
        Self(Arc::new(map))
    }

    /// The Creater of group/kind.
    pub fn get(&self, group: &str, kind: &str) -> Option<&dyn Creater> {
        self.0
            .get(&(group.to_string(), kind.to_string()))
            .map(Arc::as_ref)
    }
}

/// Serves a request to a create-only resource's collection with its Creater.
pub(crate) async fn serve(
    creater: &dyn Creater,
    method: &Method,
    namespace: Option<&str>,
    headers: &HeaderMap,
    body: Body,
    user: Option<&UserInfo>,
) -> Response {
    let error_format = response::error_format(headers);
    let fail = |e| response::error_as(e, error_format, false);
    if method != Method::POST {
        return fail(RegistryError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    // Every create-only kind is built in: its answer may be protobuf.
    let format = match response::negotiate_for(headers, true) {
        Ok(format) => format,
        Err(e) => return fail(e),
    };
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return fail(RegistryError::RequestEntityTooLarge(format!(
            "limit is {MAX_BODY} bytes"
        )));
    };
    let creation = Creation {
        namespace,
        headers,
        body: &body,
        user,
    };
    match creater.create(creation).await {
        Ok(answer) => {
            response::answer(StatusCode::CREATED, &answer, format, false).unwrap_or_else(fail)
        }
        Err(e) => fail(e),
    }
}
