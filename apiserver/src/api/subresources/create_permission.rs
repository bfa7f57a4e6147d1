//! The `create` permission that exec, attach and portforward require whatever the method:
//! a WebSocket upgrade arrives as GET and is authorized as `get`, so kube-apiserver (the
//! AuthorizePodWebsocketUpgradeCreatePermission gate, on by default since 1.35) asks the
//! authorizer again for `create` on the same subresource, keeping older policies meaningful.

use std::sync::Arc;

use registry::auth::{Attributes, UserInfo};
use registry::error::Qualified;
use registry::{RegistryError, Verb};

use crate::api::handlers::Request;

/// Ok when the request was authorized as `create`, or its user may `create` it.
pub fn ensure(req: &Request) -> Result<(), RegistryError> {
    let info = &req.info;
    if info.verb == Some(Verb::Create) {
        return Ok(());
    }
    let Some(authorizer) = req.registry.authorizer() else {
        return Err(RegistryError::Internal(
            "no authorizer available".to_string(),
        ));
    };
    let user = req
        .user
        .clone()
        .unwrap_or_else(|| Arc::new(UserInfo::anonymous()));
    let attributes = Attributes {
        user,
        verb: "create".to_string(),
        resource_request: true,
        namespace: info.namespace.clone().unwrap_or_default(),
        api_group: info.group.clone(),
        api_version: info.version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone().unwrap_or_default(),
        name: info.name.clone().unwrap_or_default(),
        path: req.uri.path().to_string(),
    };
    let verdict = authorizer.authorize(&attributes);
    if verdict.allowed() {
        return Ok(());
    }
    Err(RegistryError::Forbidden {
        resource: Qualified::new(&info.group, &info.resource),
        name: attributes.name,
        message: verdict.reason,
    })
}
