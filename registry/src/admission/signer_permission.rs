//! Whether a user may act for a signer (upstream's certificates.IsAuthorizedForSignerName):
//! the verb on `signers` of certificates.k8s.io named for the signer, or for its whole
//! domain (`example.com/*`). Shared by CertificateApproval and CertificateSigning.

use std::sync::{Arc, OnceLock};

use crate::auth::{Attributes as AuthzAttributes, Authorizer, UserInfo};

pub(super) type AuthorizerCell = Arc<OnceLock<Arc<dyn Authorizer>>>;

/// Whether `user` may `verb` for `signer`. In-process writers (no user) may; so may
/// everyone while the server has no authorizer yet (its own start-up writes).
pub(super) fn allowed(
    cell: &AuthorizerCell,
    user: Option<&Arc<UserInfo>>,
    verb: &str,
    signer: &str,
) -> bool {
    let (Some(user), Some(authorizer)) = (user, cell.get()) else {
        return true;
    };
    let ask = |name: String| {
        authorizer
            .authorize(&AuthzAttributes {
                user: user.clone(),
                verb: verb.into(),
                resource_request: true,
                namespace: String::new(),
                api_group: "certificates.k8s.io".into(),
                api_version: "*".into(),
                resource: "signers".into(),
                subresource: String::new(),
                name,
                path: String::new(),
            })
            .allowed()
    };
    if ask(signer.to_string()) {
        return true;
    }
    let domain = signer.split('/').next().unwrap_or_default();
    ask(format!("{domain}/*"))
}
