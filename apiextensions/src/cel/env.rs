//! The one CEL environment every rule compiles and runs in: the standard library and macros,
//! the strings extension, the sets library and Kubernetes' libraries (see `lib`), built once.

use std::sync::{Arc, LazyLock};

use cel::common::functions::Function;
use cel::common::types::{CelBool, CelString, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::lib::elements;

struct Shared {
    env: Arc<Env>,
    duration: Function,
    timestamp: Function,
    matches: Function,
}

static SHARED: LazyLock<Shared> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)
        .expect("the strings extension declares nothing twice");
    env.add_extension(sets)
        .expect("the sets library declares nothing twice");
    env.add_extension(super::lib::register)
        .expect("Kubernetes' libraries declare nothing twice");
    let string = || CowVal::owned(CelString::from(""));
    let duration = env
        .find_overload("duration", &[string()])
        .expect("the standard library declares duration(string)");
    let timestamp = env
        .find_overload("timestamp", &[string()])
        .expect("the standard library declares timestamp(string)");
    let matches = env
        .find_overload("matches", &[string(), string()])
        .expect("the standard library declares matches(string, string)");
    Shared {
        env: Arc::new(env),
        duration,
        timestamp,
        matches,
    }
});

/// The environment.
pub(super) fn env() -> &'static Arc<Env> {
    &SHARED.env
}

/// `duration(text)`, as CEL parses it.
pub(super) fn duration<'v>(text: &str) -> Option<Box<dyn Val + 'v>> {
    call(SHARED.duration, &[text])
}

/// `timestamp(text)`, as CEL parses it (RFC 3339).
pub(super) fn timestamp<'v>(text: &str) -> Option<Box<dyn Val + 'v>> {
    call(SHARED.timestamp, &[text])
}

/// Whether `pattern` is a regular expression `matches` accepts.
pub(super) fn valid_regex(pattern: &str) -> bool {
    call(SHARED.matches, &["", pattern]).is_some()
}

fn call<'v>(function: Function, args: &[&str]) -> Option<Box<dyn Val + 'v>> {
    let args = args
        .iter()
        .map(|a| CowVal::owned(CelString::from(a.to_string())))
        .collect();
    match function(args) {
        Ok(CowVal::Owned(value)) => Some(value),
        Ok(CowVal::Borrowed(value)) => Some(value.clone_as_boxed()),
        Err(_) => None,
    }
}

/// cel-go's sets extension, which Kubernetes includes: `sets.contains(list, sublist)`,
/// `sets.equivalent(list, list)`, `sets.intersects(list, list)`, by CEL equality.
fn sets(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let lists = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        lists(),
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        lists(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        lists(),
        intersects,
    )?;
    Ok(())
}

fn has<'v>(list: &[&(dyn Val + 'v)], value: &(dyn Val + 'v)) -> bool {
    list.iter().any(|item| item.equals(value))
}

type Pair<'a, 'v> = (Vec<&'a (dyn Val + 'v)>, Vec<&'a (dyn Val + 'v)>);

fn two<'a, 'v>(function: &str, args: &'a [CowVal<'_, 'v>]) -> Result<Pair<'a, 'v>, ExecutionError> {
    match args {
        [a, b] => Ok((
            elements(function, a.as_ref())?,
            elements(function, b.as_ref())?,
        )),
        _ => Err(ExecutionError::invalid_argument_count(2, args.len())),
    }
}

fn boolean<'b, 'v>(value: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelBool::from(value)))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, sub) = two("sets.contains", &args)?;
    let result = sub.iter().all(|v| has(&list, *v));
    boolean(result)
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two("sets.equivalent", &args)?;
    let result = a.iter().all(|v| has(&b, *v)) && b.iter().all(|v| has(&a, *v));
    boolean(result)
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two("sets.intersects", &args)?;
    let result = a.iter().any(|v| has(&b, *v));
    boolean(result)
}
