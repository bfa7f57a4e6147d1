//! The authentication and authorization reviews: create-only catalogue entries that store
//! nothing (upstream's REST storage without a store), each answered from the request by its
//! [`Creater`] through the API's create-only path (`crate::api::create_only`).
//!
//! - `self_subject`: authentication.k8s.io SelfSubjectReview (`kubectl auth whoami`);
//! - `token`: authentication.k8s.io TokenReview (other components' webhook authenticators);
//! - `access`: authorization.k8s.io SubjectAccessReview, LocalSubjectAccessReview,
//!   SelfSubjectAccessReview, SelfSubjectRulesReview (`kubectl auth can-i [--list]`).

pub mod access;
pub mod self_subject;
pub mod token;

use std::sync::Arc;

use crate::api::create_only::{Creater, Creaters};
use crate::authn::Authenticator;
use crate::authz::Authorization;

/// The reviews' Creaters, by group and kind: the access reviews ask `authorization`, token
/// reviews `authenticator`.
pub fn creaters(authorization: &Authorization, authenticator: &Arc<Authenticator>) -> Creaters {
    let authorization = || authorization.clone();
    Creaters::new([
        (
            self_subject::GROUP,
            self_subject::KIND,
            Arc::new(self_subject::SelfSubjectReview) as Arc<dyn Creater>,
        ),
        (
            token::GROUP,
            token::KIND,
            Arc::new(token::TokenReview(authenticator.clone())),
        ),
        (
            access::GROUP,
            access::SUBJECT,
            Arc::new(access::SubjectAccess(authorization())),
        ),
        (
            access::GROUP,
            access::LOCAL,
            Arc::new(access::LocalSubjectAccess(authorization())),
        ),
        (
            access::GROUP,
            access::SELF,
            Arc::new(access::SelfSubjectAccess(authorization())),
        ),
        (
            access::GROUP,
            access::RULES,
            Arc::new(access::SelfSubjectRules(authorization())),
        ),
    ])
}
