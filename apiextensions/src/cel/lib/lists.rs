//! Kubernetes' lists library: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`,
//! `lastIndexOf(x)` on lists (the strings extension has its own `indexOf` on strings).

use std::cmp::Ordering;

use cel::common::types::{CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{boolean, elements, fail, int, Out};

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    Ok(())
}

fn target<'a, 'v>(
    function: &str,
    args: &'a [CowVal<'_, 'v>],
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    match args.first() {
        Some(list) => elements(function, list.as_ref()),
        None => Err(ExecutionError::invalid_argument_count(1, 0)),
    }
}

fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| fail(function, "list elements are not comparable"))?
        .compare(b)
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let items = target("isSorted", &args)?;
    for pair in items.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
            return boolean(false);
        }
    }
    boolean(true)
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let items = target("sum", &args)?;
    let mut iter = items.into_iter();
    // An empty list sums to int zero: with no element, nothing tells its type.
    let Some(first) = iter.next() else {
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut total: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in iter {
        let adder = total
            .as_adder()
            .ok_or_else(|| fail("sum", "list elements cannot be added"))?;
        let next = adder.add(item)?.as_ref().clone_as_boxed();
        total = next;
    }
    Ok(CowVal::Owned(total))
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, prefer: Ordering) -> Out<'b, 'v> {
    let items = target(function, &args)?;
    let mut best: Option<&(dyn Val + 'v)> = None;
    for item in items {
        best = match best {
            Some(b) if compare(function, item, b)? != prefer => Some(b),
            _ => Some(item),
        };
    }
    match best {
        Some(b) => Ok(CowVal::Owned(b.clone_as_boxed())),
        None => Err(fail(function, format!("{function} called on empty list"))),
    }
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn position<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, last: bool) -> Out<'b, 'v> {
    let items = target(function, &args)?;
    let needle = args
        .get(1)
        .ok_or_else(|| ExecutionError::invalid_argument_count(2, args.len()))?;
    let found = if last {
        items.iter().rposition(|v| v.equals(needle.as_ref()))
    } else {
        items.iter().position(|v| v.equals(needle.as_ref()))
    };
    int(found.map_or(-1, |i| i as i64))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    position(args, "indexOf", false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    position(args, "lastIndexOf", true)
}
