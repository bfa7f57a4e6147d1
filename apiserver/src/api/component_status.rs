//! `componentstatuses` (core/v1, deprecated upstream since 1.19 but served): the health of the
//! storage and of the controller manager and scheduler, which run in this process. Nothing is
//! stored; each get and list asks (upstream's pkg/registry/core/componentstatus).

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use registry::{RegistryError, ResourceInfo};
use serde_json::{json, Value};
use storage::backend::DynBackend;

use super::response;
use crate::table::{self, IncludeObject};

/// Upstream's deprecation warning on every answer.
const DEPRECATED: &str = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";

/// What the statuses are read from.
#[derive(Clone, Default)]
pub struct Components {
    /// The storage (None in harnesses that serve the API without one of their own).
    pub backend: Option<DynBackend>,
    /// Whether this server runs the controllers and the scheduler (it may leave either to
    /// another process, or lead neither).
    pub controllers: bool,
    pub scheduler: bool,
}

fn status(name: &str, healthy: Result<(), String>) -> Value {
    let condition = match healthy {
        Ok(()) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
        Err(e) => json!({"type": "Healthy", "status": "False", "error": e}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [condition],
    })
}

impl Components {
    /// Every component's status, by name.
    async fn statuses(&self) -> Vec<Value> {
        let mut all = vec![
            status(
                "controller-manager",
                if self.controllers {
                    Ok(())
                } else {
                    Err("the controllers do not run in this server".into())
                },
            ),
            status(
                "scheduler",
                if self.scheduler {
                    Ok(())
                } else {
                    Err("the scheduler does not run in this server (--scheduler=false)".into())
                },
            ),
        ];
        // Upstream lists the etcd servers it stores in; the embedded store is the storage of
        // a server that has none.
        if let Some(backend) = self.backend.as_ref().filter(|b| b.name() == "etcd") {
            let health = backend.check_health().await.map_err(|e| e.to_string());
            all.push(status("etcd-0", health));
        }
        all.sort_by(|a, b| {
            a["metadata"]["name"]
                .as_str()
                .cmp(&b["metadata"]["name"].as_str())
        });
        all
    }

    /// A get (`name`) or list of component statuses, in the negotiated format.
    pub async fn serve(
        &self,
        info: &ResourceInfo,
        method: &Method,
        name: Option<&str>,
        headers: &HeaderMap,
        pretty: bool,
    ) -> Response {
        let error_format = response::error_format(headers);
        let fail = |e| response::error_as(e, error_format, pretty);
        if method != Method::GET && method != Method::HEAD {
            return fail(RegistryError::MethodNotAllowed(
                "the server does not allow this method on the requested resource".into(),
            ));
        }
        let format = match response::negotiate_for(headers, true) {
            Ok(format) => format,
            Err(e) => return fail(e),
        };
        let statuses = self.statuses().await;
        let body = match name {
            Some(name) => match statuses.into_iter().find(|s| s["metadata"]["name"] == name) {
                Some(one) if format.is_table() => {
                    table::table(info, &[one], None, IncludeObject::default())
                }
                Some(one) => one,
                None => return fail(RegistryError::not_found(&info.qualified_resource(), name)),
            },
            None if format.is_table() => {
                table::table(info, &statuses, None, IncludeObject::default())
            }
            None => json!({
                "kind": "ComponentStatusList",
                "apiVersion": "v1",
                "metadata": {},
                "items": statuses,
            }),
        };
        let mut answer =
            response::answer(StatusCode::OK, &body, format, pretty).unwrap_or_else(fail);
        answer
            .headers_mut()
            .insert(header::WARNING, HeaderValue::from_static(DEPRECATED));
        answer
    }
}
