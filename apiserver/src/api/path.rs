//! The one reading of an API path that both request info and the store a request is served by
//! are built from.
//!
//! What a spelling of a path means, and why:
//!
//! - The path is percent-decoded exactly once (axum's `Path` extractor does it, as Go's
//!   `URL.Path` holds the decoded path upstream's request info splits), so `%2e` is `.` and
//!   `%2F` is `/`. It is never decoded again: `%252e` stays the literal segment `%2e`, a name no
//!   object can have.
//! - Leading and trailing slashes are ignored, as upstream's `splitPath`
//!   (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) trims them:
//!   `/api/v1/pods/` is `/api/v1/pods`.
//! - A path with an empty (`//`), `.` or `..` segment anywhere is refused, not resolved.
//!   kube-apiserver never cleans API paths: its director hands `/api` and `/apis` requests to
//!   go-restful's `Dispatch` directly, bypassing Go's `http.ServeMux` and the 301 to the cleaned
//!   path it would answer (staging/src/k8s.io/apiserver/pkg/server/handler.go), and its request
//!   info keeps every inner segment, empty or dotted, as a segment. `.` and `..` are refused as
//!   names by `IsValidPathSegmentName` (apimachinery/pkg/api/validation/path/name.go, checked
//!   by the registry's `NamespaceKeyFunc`) and, since the fix of CVE-2022-3162
//!   (kubernetes/kubernetes#113756), as any segment of a storage key (`storage.PrepareKey`).
//!   Refusing them here, before request info is built, means that what authorization is asked
//!   about and what the store serves are the same segments, and that no spelling reaches an
//!   object its canonical path does not name (`namespaces/../secrets` is not the cluster-wide
//!   list, `namespaces/a/../b/secrets` is not namespace `b`'s list). Kubernetes clients never
//!   send such paths (client-go joins paths with `path.Join`, kubectl and curl clean them).
//!
//! A refused path is answered as any path no route serves: 404 with a metav1.Status.

use std::fmt;

/// Why a path has no canonical reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonCanonical {
    /// `//` inside the path.
    EmptySegment,
    /// A `.` segment (also spelled `%2e`).
    Dot,
    /// A `..` segment (also spelled `%2e%2e`, `.%2E`, ...).
    DotDot,
}

impl fmt::Display for NonCanonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The wording of upstream's IsValidPathSegmentName.
        f.write_str(match self {
            NonCanonical::EmptySegment => "a path segment may not be empty",
            NonCanonical::Dot => "a path segment may not be '.'",
            NonCanonical::DotDot => "a path segment may not be '..'",
        })
    }
}

/// The segments of a percent-decoded path, leading and trailing slashes ignored; an error when
/// any segment is empty, `.` or `..`. The empty path (or `/`) has no segments.
pub fn segments(decoded: &str) -> Result<Vec<&str>, NonCanonical> {
    let trimmed = decoded.trim_matches('/');
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    trimmed
        .split('/')
        .map(|segment| match segment {
            "" => Err(NonCanonical::EmptySegment),
            "." => Err(NonCanonical::Dot),
            ".." => Err(NonCanonical::DotDot),
            _ => Ok(segment),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_paths_split_as_upstream_splits_them() {
        assert_eq!(
            segments("v1/namespaces/a/secrets"),
            Ok(vec!["v1", "namespaces", "a", "secrets"])
        );
        // Leading and trailing slashes, any number of them, are not segments.
        assert_eq!(
            segments("/v1/namespaces/a/secrets/"),
            Ok(vec!["v1", "namespaces", "a", "secrets"])
        );
        assert_eq!(segments("//v1//"), Ok(vec!["v1"]));
        assert_eq!(segments(""), Ok(vec![]));
        assert_eq!(segments("/"), Ok(vec![]));
        assert_eq!(segments("//"), Ok(vec![]));
        // Dots inside a segment are part of a name.
        assert_eq!(
            segments("apps/v1/namespaces/a.b/deployments/..web.../x.."),
            Ok(vec![
                "apps",
                "v1",
                "namespaces",
                "a.b",
                "deployments",
                "..web...",
                "x.."
            ])
        );
        // Decoded once only: what was `%252e%252e` on the wire is a literal name here.
        assert_eq!(
            segments("v1/namespaces/%2e%2e/secrets"),
            Ok(vec!["v1", "namespaces", "%2e%2e", "secrets"])
        );
    }

    #[test]
    fn dot_segments_and_empty_segments_are_refused_wherever_they_are() {
        use NonCanonical::*;
        for (path, reason) in [
            ("v1/namespaces/../secrets", DotDot),
            ("v1/namespaces/b/../a/secrets/s", DotDot),
            ("v1/namespaces/a/secrets/..", DotDot),
            ("v1/namespaces/a/secrets/../", DotDot),
            ("v1/namespaces/a/secrets/s/..", DotDot),
            ("../v1/secrets", DotDot),
            ("/../v1/secrets", DotDot),
            ("..", DotDot),
            ("v1/namespaces/./secrets", Dot),
            ("./v1/secrets", Dot),
            ("v1/secrets/.", Dot),
            ("v1/secrets/./", Dot),
            (".", Dot),
            ("v1//namespaces/a/secrets", EmptySegment),
            ("v1/namespaces//secrets", EmptySegment),
            ("v1/namespaces/a/secrets//s", EmptySegment),
            // `namespaces/a%2F..%2Fb/secrets` on the wire: `%2F` decodes to `/`, so encoded
            // slashes around dots make a dot segment.
            ("v1/namespaces/a/../b/secrets", DotDot),
            // Below a proxy subresource too: the rest of the path is no less a path.
            ("v1/nodes/n/proxy/../../secrets", DotDot),
            ("v1/nodes/n/proxy/logs//x", EmptySegment),
        ] {
            assert_eq!(segments(path), Err(reason), "{path}");
        }
        assert_eq!(
            NonCanonical::DotDot.to_string(),
            "a path segment may not be '..'"
        );
    }
}
