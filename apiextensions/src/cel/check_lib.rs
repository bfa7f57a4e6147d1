//! The checker's knowledge of Kubernetes' libraries (see `lib`): the result type of each of
//! their functions, and which argument and receiver types they take.

use super::lib::{authz, format, net, quantity, semver, url};
use super::types::{Group, Ty};

/// The outcome of typing a call against the libraries.
pub(super) enum Typed<'n> {
    /// Not a library function: the checker's own rules apply.
    Unknown,
    /// A library function with no overload for these types.
    NoOverload,
    Ty(Ty<'n>),
}

/// The checker's type of values of a library type.
fn opaque(t: &'static cel::common::types::Type) -> Ty<'static> {
    Ty::Opaque(t.name())
}

fn quantity_ty<'n>() -> Ty<'n> {
    opaque(&quantity::QUANTITY_TYPE)
}
fn ip_ty<'n>() -> Ty<'n> {
    opaque(&net::IP_TYPE)
}
fn cidr_ty<'n>() -> Ty<'n> {
    opaque(&net::CIDR_TYPE)
}
fn url_ty<'n>() -> Ty<'n> {
    opaque(&url::URL_TYPE)
}
fn semver_ty<'n>() -> Ty<'n> {
    opaque(&semver::SEMVER_TYPE)
}
fn format_ty<'n>() -> Ty<'n> {
    opaque(&format::FORMAT_TYPE)
}

/// The authorizer library's types.
pub(super) fn authorizer_ty<'n>() -> Ty<'n> {
    opaque(&authz::AUTHORIZER_TYPE)
}
pub(super) fn resource_check_ty<'n>() -> Ty<'n> {
    opaque(&authz::RESOURCE_CHECK_TYPE)
}
fn path_check_ty<'n>() -> Ty<'n> {
    opaque(&authz::PATH_CHECK_TYPE)
}
fn group_check_ty<'n>() -> Ty<'n> {
    opaque(&authz::GROUP_CHECK_TYPE)
}
fn decision_ty<'n>() -> Ty<'n> {
    opaque(&authz::DECISION_TYPE)
}

/// Whether `name` is the name of one of the libraries' types.
pub(super) fn is_type_name(name: &str) -> bool {
    [
        &quantity::QUANTITY_TYPE,
        &net::IP_TYPE,
        &net::CIDR_TYPE,
        &url::URL_TYPE,
        &semver::SEMVER_TYPE,
        &format::FORMAT_TYPE,
    ]
    .iter()
    .any(|t| t.name() == name)
}

/// Whether `t` may be of the kind `want` (unknown types may be anything).
fn may_be(t: Ty, want: Group) -> bool {
    t.group().is_none_or(|g| g == want)
}

fn takes(args: &[Ty], want: &[Group]) -> bool {
    args.len() == want.len() && args.iter().zip(want).all(|(a, w)| may_be(*a, *w))
}

/// A global function `name` applied to `args`.
pub(super) fn global<'n>(name: &str, args: &[Ty<'n>]) -> Typed<'n> {
    use Group::String as S;
    let (params, result): (&[Group], Ty<'n>) = match name {
        "quantity" => (&[S], quantity_ty()),
        "ip" => (&[S], ip_ty()),
        "cidr" => (&[S], cidr_ty()),
        "url" => (&[S], url_ty()),
        "semver" if args.len() == 2 => (&[S, Group::Bool], semver_ty()),
        "semver" => (&[S], semver_ty()),
        "isSemver" if args.len() == 2 => (&[S, Group::Bool], Ty::Bool),
        "isQuantity" | "isIP" | "isCIDR" | "isURL" | "isSemver" | "ip.isCanonical" => {
            (&[S], Ty::Bool)
        }
        "format.named" => (&[S], Ty::Optional),
        _ => match name.strip_prefix("format.") {
            Some(format) if format::names().any(|n| n == format) => (&[], format_ty()),
            _ => return Typed::Unknown,
        },
    };
    if takes(args, params) {
        Typed::Ty(result)
    } else {
        Typed::NoOverload
    }
}

/// A member function `name` on `target` applied to `args`.
pub(super) fn member<'n>(name: &str, target: Ty<'n>, args: &[Ty<'n>]) -> Typed<'n> {
    let q = quantity_ty();
    let group = |t: Ty<'n>| t.group().unwrap_or(Group::Null);
    let (receivers, params, result): (&[Ty<'n>], Vec<Group>, Ty<'n>) = match name {
        "sign" => (&[q], vec![], Ty::Int),
        "isInteger" => (&[q], vec![], Ty::Bool),
        "asInteger" => (&[q], vec![], Ty::Int),
        "asApproximateFloat" => (&[q], vec![], Ty::Double),
        "add" | "sub" => {
            // a quantity or an int
            let ok =
                args.len() == 1 && (may_be(args[0], Group::Number) || may_be(args[0], group(q)));
            return receiver(target, &[q], ok, q);
        }
        "isGreaterThan" | "isLessThan" | "compareTo" => {
            let result = if name == "compareTo" {
                Ty::Int
            } else {
                Ty::Bool
            };
            let same = args.len() == 1
                && (args[0].group().is_none() || target.group().is_none() || args[0].same(target));
            return receiver(target, &[q, semver_ty()], same, result);
        }
        "family" => (&[ip_ty()], vec![], Ty::Int),
        "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast" => (&[ip_ty()], vec![], Ty::Bool),
        "containsIP" | "containsCIDR" => {
            let other = if name == "containsIP" {
                ip_ty()
            } else {
                cidr_ty()
            };
            let ok = args.len() == 1
                && (may_be(args[0], Group::String) || may_be(args[0], group(other)));
            return receiver(target, &[cidr_ty()], ok, Ty::Bool);
        }
        "ip" => (&[cidr_ty()], vec![], ip_ty()),
        "masked" => (&[cidr_ty()], vec![], cidr_ty()),
        "prefixLength" => (&[cidr_ty()], vec![], Ty::Int),
        "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => {
            (&[url_ty()], vec![], Ty::String)
        }
        "getQuery" => (&[url_ty()], vec![], Ty::Map(None)),
        "major" | "minor" | "patch" => (&[semver_ty()], vec![], Ty::Int),
        "validate" => (&[format_ty()], vec![Group::String], Ty::Optional),
        "find" => (&[Ty::String], vec![Group::String], Ty::String),
        "findAll" => {
            let params = if args.len() == 2 {
                vec![Group::String, Group::Number]
            } else {
                vec![Group::String]
            };
            (&[Ty::String], params, Ty::List(None))
        }
        "isSorted" => (&[Ty::List(None)], vec![], Ty::Bool),
        "path" => (&[authorizer_ty()], vec![Group::String], path_check_ty()),
        "group" => (&[authorizer_ty()], vec![Group::String], group_check_ty()),
        "serviceAccount" => (
            &[authorizer_ty()],
            vec![Group::String, Group::String],
            authorizer_ty(),
        ),
        "resource" => (
            &[group_check_ty()],
            vec![Group::String],
            resource_check_ty(),
        ),
        "subresource" | "namespace" | "name" | "fieldSelector" | "labelSelector" => (
            &[resource_check_ty()],
            vec![Group::String],
            resource_check_ty(),
        ),
        "check" => {
            let ok = takes(args, &[Group::String]);
            return receiver(
                target,
                &[path_check_ty(), resource_check_ty()],
                ok,
                decision_ty(),
            );
        }
        "allowed" | "errored" => (&[decision_ty()], vec![], Ty::Bool),
        "reason" | "error" => (&[decision_ty()], vec![], Ty::String),
        "sum" | "min" | "max" => {
            let item = match target {
                Ty::List(Some(items)) => Ty::of(items),
                _ => Ty::Dyn,
            };
            return receiver(target, &[Ty::List(None)], args.is_empty(), item);
        }
        "indexOf" | "lastIndexOf" if matches!(target, Ty::List(_)) => {
            return receiver(target, &[Ty::List(None)], args.len() == 1, Ty::Int);
        }
        _ => return Typed::Unknown,
    };
    let ok = takes(args, &params);
    receiver(target, receivers, ok, result)
}

fn receiver<'n>(target: Ty<'n>, receivers: &[Ty<'n>], args_ok: bool, result: Ty<'n>) -> Typed<'n> {
    let target_ok = match target.group() {
        None => true,
        Some(g) => receivers.iter().any(|r| r.group() == Some(g)),
    };
    if target_ok && args_ok {
        // on a value of unknown type, the result of a function with overloads of several
        // result types is unknown too
        match (target.group(), receivers.len()) {
            (None, n) if n > 1 => Typed::Ty(Ty::Dyn),
            _ => Typed::Ty(result),
        }
    } else {
        Typed::NoOverload
    }
}
