//! `/version`, shaped as kube-apiserver's version.Info so clients parse it unchanged.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The Kubernetes release whose API and behaviour this server follows (its discovery and
/// OpenAPI are 1.35's); clients compare it with their own for skew warnings.
pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "35";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    major: &'static str,
    minor: &'static str,
    git_version: String,
    git_commit: &'static str,
    git_tree_state: &'static str,
    build_date: &'static str,
    go_version: &'static str,
    compiler: &'static str,
    platform: String,
}

pub fn info() -> Info {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    Info {
        major: KUBE_MAJOR,
        minor: KUBE_MINOR,
        git_version: format!(
            "v{KUBE_MAJOR}.{KUBE_MINOR}.0+rs.{}",
            env!("CARGO_PKG_VERSION")
        ),
        git_commit: option_env!("GIT_COMMIT").unwrap_or("unknown"),
        git_tree_state: "clean",
        build_date: option_env!("BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
        go_version: "none (rust)",
        compiler: "rustc",
        platform: format!("{}/{arch}", std::env::consts::OS),
    }
}

/// Upstream writes `/version` with WriteRawJSON: indented, no trailing newline, whatever the
/// client.
pub async fn handler() -> Response {
    match serde_json::to_vec_pretty(&info()) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
