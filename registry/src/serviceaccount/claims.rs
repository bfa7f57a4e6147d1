//! The claims of a bound service account token (upstream's pkg/serviceaccount/claims.go): the
//! registered JWT claims plus a private `kubernetes.io` claim naming the account and the object
//! the token is bound to. Fields are in alphabetical order, as upstream's tokens have them.

use serde::{Deserialize, Deserializer, Serialize};

/// How far clocks may disagree: a token is still good this long after `exp`, and already
/// good this long before `nbf` (go-jose's DefaultLeeway, which upstream validates with).
pub const LEEWAY_SECONDS: i64 = 60;

/// The expiration the ServiceAccount admission asks for in projected volumes: a token this
/// old is only warned about (upstream's WarnOnlyBoundTokenExpirationSeconds).
pub const WARN_ONLY_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;

/// How long such a pod-bound token really lives when expiration is extended (upstream's
/// ExpirationExtensionSeconds: a year).
pub const EXTENDED_EXPIRATION_SECONDS: i64 = 24 * 365 * 60 * 60;

/// upstream's ServiceAccountUsernamePrefix.
pub const USERNAME_PREFIX: &str = "system:serviceaccount:";
/// upstream's AllServiceAccountsGroup.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("{USERNAME_PREFIX}{namespace}:{name}")
}

/// `system:serviceaccounts` and `system:serviceaccounts:<namespace>`.
pub fn group_names(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    #[serde(default, deserialize_with = "audiences")]
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub iss: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(
        rename = "kubernetes.io",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kubernetes: Option<Private>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sub: String,
}

/// The `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Private {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    #[serde(default)]
    pub serviceaccount: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

impl Ref {
    pub fn of(obj: &serde_json::Value) -> Self {
        Self {
            name: crate::object::name(obj).to_string(),
            uid: crate::object::uid(obj).to_string(),
        }
    }
}

/// `aud` is a string or a list of strings (RFC 7519 4.1.3).
fn audiences<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Audience {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<Audience>::deserialize(d)? {
        None => Vec::new(),
        Some(Audience::One(a)) => vec![a],
        Some(Audience::Many(a)) => a,
    })
}

/// What a token is bound to besides its account.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    pub pod: Option<Ref>,
    pub secret: Option<Ref>,
    pub node: Option<Ref>,
}

/// The claims of a new token for `account` (namespace, name, uid), as upstream's Claims():
/// valid from `now` for `expiration_seconds`, warned about after `warn_after_seconds` when
/// that is not 0. A pod-bound token names the pod's node too, when it has one.
pub fn new_claims(
    account: (&str, &str, &str),
    binding: Binding,
    now: i64,
    expiration_seconds: i64,
    warn_after_seconds: i64,
    audiences: Vec<String>,
) -> Claims {
    let (namespace, name, uid) = account;
    let mut private = Private {
        namespace: namespace.to_string(),
        serviceaccount: Ref {
            name: name.to_string(),
            uid: uid.to_string(),
        },
        ..Default::default()
    };
    match binding {
        Binding {
            pod: Some(pod),
            node,
            ..
        } => {
            private.pod = Some(pod);
            private.node = node;
        }
        Binding {
            secret: Some(secret),
            ..
        } => private.secret = Some(secret),
        Binding { node, .. } => private.node = node,
    }
    if warn_after_seconds != 0 {
        private.warnafter = Some(now + warn_after_seconds);
    }
    Claims {
        aud: audiences,
        exp: Some(now + expiration_seconds),
        iat: Some(now),
        iss: String::new(),
        jti: uuid::Uuid::new_v4().to_string(),
        kubernetes: Some(private),
        nbf: Some(now),
        sub: username(namespace, name),
    }
}

/// Why the times of a token do not hold at `now` (upstream's messages), with the leeway.
pub fn check_times(claims: &Claims, now: i64) -> Result<(), &'static str> {
    if claims.nbf.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
        return Err("service account token is not valid yet");
    }
    if claims.exp.is_some_and(|exp| now - LEEWAY_SECONDS > exp) {
        return Err("service account token has expired");
    }
    if claims.iat.is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
        return Err("service account token is issued in the future");
    }
    Ok(())
}
