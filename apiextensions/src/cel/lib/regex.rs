//! The regex library: `s.find(re)` (the first match, or ""), `s.findAll(re)` and
//! `s.findAll(re, n)` (at most n matches; all when n is negative).

use std::cell::RefCell;

use cel::common::types::{CelInt, CelList, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use regex::Regex;

use super::{arg, fail, string, text, Out};

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    Ok(())
}

thread_local! {
    /// The last pattern compiled on this thread: a rule runs the same one over many items.
    static LAST: RefCell<Option<(String, Regex)>> = const { RefCell::new(None) };
}

/// Runs `f` with `pattern` compiled.
fn with_regex<T>(
    function: &str,
    pattern: &str,
    f: impl FnOnce(&Regex) -> T,
) -> Result<T, ExecutionError> {
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.as_ref().is_none_or(|(p, _)| p != pattern) {
            let re =
                Regex::new(pattern).map_err(|e| fail(function, format!("Illegal regex: {e}")))?;
            *last = Some((pattern.to_string(), re));
        }
        match last.as_ref() {
            Some((_, re)) => Ok(f(re)),
            None => Err(fail(function, "Illegal regex")),
        }
    })
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = text("find", &args, 0)?;
    let pattern = text("find", &args, 1)?;
    let found = with_regex("find", pattern, |re| {
        re.find(s)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default()
    })?;
    string(found)
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = text("findAll", &args, 0)?;
    let pattern = text("findAll", &args, 1)?;
    let limit = match args.len() {
        3 => i64::from(*arg::<CelInt>("findAll", &args, 2)?),
        _ => -1,
    };
    let found: Vec<String> = with_regex("findAll", pattern, |re| {
        let all = re.find_iter(s).map(|m| m.as_str().to_string());
        match usize::try_from(limit) {
            Ok(n) => all.take(n).collect(),
            Err(_) => all.collect(),
        }
    })?;
    let list: Vec<Box<dyn Val + 'v>> = found
        .into_iter()
        .map(|m| Box::new(CelString::from(m)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelList::from(list)))
}
