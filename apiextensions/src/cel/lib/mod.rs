//! Kubernetes' own CEL libraries (upstream's k8s.io/apiserver/pkg/cel/library), on the cel
//! crate: quantities, IPs and CIDRs, URLs, semantic versions, named formats, and the lists
//! and regex libraries. The values of the first five are opaque types of their own (the
//! crate takes any `Val` as a value and picks overloads by its type); the functions are
//! overloads declared on the one environment.
//!
//! Upstream versions its environment: a library introduced after the base version is only
//! usable in newly written expressions from the version it came in. This server serves the
//! 1.35 environment for every write, where all of these are available, so there is one
//! environment and no per-version gating.

pub(super) mod authz;
pub(super) mod format;
pub(super) mod lists;
pub(super) mod net;
mod netip;
pub(super) mod quantity;
pub(super) mod regex;
pub(super) mod semver;
pub(super) mod url;

#[cfg(test)]
mod tests;

use cel::common::types::{CelBool, CelInt, CelString};
use cel::common::value::{CowVal, FromVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// Declares every library on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    // named by expressions, as `type(x) == net.IP`
    for t in [
        &quantity::QUANTITY_TYPE,
        &net::IP_TYPE,
        &net::CIDR_TYPE,
        &url::URL_TYPE,
        &semver::SEMVER_TYPE,
        &format::FORMAT_TYPE,
        &authz::AUTHORIZER_TYPE,
        &authz::PATH_CHECK_TYPE,
        &authz::GROUP_CHECK_TYPE,
        &authz::RESOURCE_CHECK_TYPE,
        &authz::DECISION_TYPE,
    ] {
        env.add_type(t.to_owned())?;
    }
    quantity::register(env)?;
    net::register(env)?;
    url::register(env)?;
    regex::register(env)?;
    lists::register(env)?;
    format::register(env)?;
    semver::register(env)?;
    authz::register(env)?;
    Ok(())
}

/// A copy of a value of one of the libraries' types that borrows nothing; `None` for any
/// other value.
pub(super) fn clone_static(value: &dyn Val) -> Option<Box<dyn Val + 'static>> {
    let any = value.as_any()?;
    copy::<quantity::Quantity>(any)
        .or_else(|| copy::<net::Ip>(any))
        .or_else(|| copy::<net::Cidr>(any))
        .or_else(|| copy::<url::Url>(any))
        .or_else(|| copy::<semver::Semver>(any))
        .or_else(|| copy::<format::Format>(any))
        .or_else(|| authz::clone_static(any))
}

/// `any` as a boxed `T`, if it is one.
fn copy<T: Val + Clone + 'static>(any: &dyn std::any::Any) -> Option<Box<dyn Val>> {
    any.downcast_ref::<T>()
        .map(|v| Box::new(v.clone()) as Box<dyn Val>)
}

/// The result of an overload.
pub(super) type Out<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// An evaluation error of `function`, worded as upstream's library words it.
pub(super) fn fail(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// Argument `i` as a `T`.
pub(super) fn arg<'a, 'v, T: FromVal<'a, 'v>>(
    function: &str,
    args: &'a [CowVal<'_, 'v>],
    i: usize,
) -> Result<&'a T, ExecutionError> {
    args.get(i)
        .and_then(|a| T::from_val(a.as_ref()))
        .ok_or_else(|| fail(function, "unexpected argument type"))
}

/// Argument `i` as a string.
pub(super) fn text<'a>(
    function: &str,
    args: &'a [CowVal<'_, '_>],
    i: usize,
) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| <&str>::try_from(a.as_ref()).ok())
        .ok_or_else(|| fail(function, "expected a string argument"))
}

pub(super) fn boolean<'b, 'v>(value: bool) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(value)))
}

pub(super) fn int<'b, 'v>(value: i64) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(value)))
}

pub(super) fn string<'b, 'v>(value: String) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelString::from(value)))
}

/// An ordering as `compareTo` gives it.
pub(super) fn ordering<'b, 'v>(order: std::cmp::Ordering) -> Out<'b, 'v> {
    int(order as i64)
}

/// Implements `Val` for a `'static` type of a library: its CEL type, equality by
/// `PartialEq`, copies by `Clone`, and downcasts.
macro_rules! opaque_val {
    ($rust:ty, $cel:ident) => {
        impl cel::common::value::Val for $rust {
            fn get_type(&self) -> &cel::common::types::Type {
                &$cel
            }
            fn cel_type() -> &'static cel::common::types::Type {
                &$cel
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other.downcast_ref::<$rust>().is_some_and(|o| o == self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl cel::common::value::StaticVal for $rust {}
    };
}
pub(super) use opaque_val;

/// The elements of a list argument.
pub(super) fn elements<'a, 'v>(
    function: &str,
    list: &'a (dyn Val + 'v),
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .ok_or_else(|| fail(function, "expected a list"))?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}
