//! The quantity library: `quantity("1.5Gi")`, `isQuantity`, and a quantity's `sign`,
//! `isInteger`, `asInteger`, `asApproximateFloat`, `add`/`sub` (a quantity or an int),
//! `isGreaterThan`, `isLessThan` and `compareTo`. Arithmetic is exact, on the registry's
//! quantities (the quota's).

use cel::common::types::{CelDouble, CelInt, Type, INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};
use registry::quota::Quantity as Exact;

use super::{arg, boolean, fail, int, opaque_val, ordering, text, Out};

pub(in crate::cel) static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// A quantity value.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::cel) struct Quantity(pub(in crate::cel) Exact);

opaque_val!(Quantity, QUANTITY_TYPE);

/// Why Go's resource.ParseQuantity refuses `text`: its shape, its suffix, or its number.
fn refusal(text: &str) -> &'static str {
    const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    let rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    let whole = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let mut number_end = whole;
    if rest[whole..].starts_with('.') {
        number_end = rest[whole + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(rest.len(), |i| whole + 1 + i);
    }
    if number_end == 0 || rest[..number_end] == *"." {
        return FORMAT;
    }
    let suffix = &rest[number_end..];
    let letters = suffix
        .find(|c: char| !"eEinumkKMGTP".contains(c))
        .unwrap_or(suffix.len());
    let tail = suffix[letters..]
        .strip_prefix(['+', '-'])
        .unwrap_or(&suffix[letters..]);
    if !tail.bytes().all(|b| b.is_ascii_digit()) {
        return FORMAT;
    }
    let known = matches!(
        suffix,
        "" | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
            | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
    ) || suffix.strip_prefix(['e', 'E']).is_some_and(|e| {
        e.strip_prefix(['+', '-'])
            .unwrap_or(e)
            .bytes()
            .all(|b| b.is_ascii_digit())
            && !e.is_empty()
    });
    if known {
        "unable to parse numeric part of quantity"
    } else {
        "unable to parse quantity's suffix"
    }
}

/// Parses a quantity as upstream does: no surrounding space.
pub(in crate::cel) fn parse(text: &str) -> Option<Exact> {
    if text.trim() != text {
        return None;
    }
    Exact::parse(text)
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || QUANTITY_TYPE.to_owned();
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        from_string,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], sign)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("asInteger", "quantity_get_integer", q(), vec![], as_integer)?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        as_float,
    )?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        greater,
    )?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], less)?;
    env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], compare)?;
    Ok(())
}

fn from_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let text = text("quantity", &args, 0)?;
    match parse(text) {
        Some(q) => Ok(CowVal::owned(Quantity(q))),
        None => Err(fail("quantity", refusal(text))),
    }
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse(text("isQuantity", &args, 0)?).is_some())
}

fn this<'a>(function: &str, args: &'a [CowVal<'_, '_>]) -> Result<&'a Exact, cel::ExecutionError> {
    arg::<Quantity>(function, args, 0).map(|q| &q.0)
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    int(this("sign", &args)?.signum())
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(this("isInteger", &args)?.as_i64().is_some())
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    match this("asInteger", &args)?.as_i64() {
        Some(n) => int(n),
        None => Err(fail("asInteger", "cannot convert value to integer")),
    }
}

fn as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelDouble::from(
        this("asApproximateFloat", &args)?.as_f64(),
    )))
}

/// The second operand of `add`/`sub`: a quantity, or an int as a decimal quantity.
fn operand(function: &str, args: &[CowVal<'_, '_>]) -> Result<Exact, cel::ExecutionError> {
    if let Ok(q) = arg::<Quantity>(function, args, 1) {
        return Ok(q.0);
    }
    let n = arg::<CelInt>(function, args, 1)?;
    Ok(Exact::count(i64::from(*n)))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let mut sum = *this("add", &args)?;
    sum.add(&operand("add", &args)?);
    Ok(CowVal::owned(Quantity(sum)))
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let mut difference = *this("sub", &args)?;
    difference.sub(&operand("sub", &args)?);
    Ok(CowVal::owned(Quantity(difference)))
}

fn pair<'a>(
    function: &str,
    args: &'a [CowVal<'_, '_>],
) -> Result<(&'a Exact, &'a Exact), cel::ExecutionError> {
    Ok((
        this(function, args)?,
        &arg::<Quantity>(function, args, 1)?.0,
    ))
}

fn greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = pair("isGreaterThan", &args)?;
    boolean(a > b)
}

fn less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = pair("isLessThan", &args)?;
    boolean(a < b)
}

fn compare<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = pair("compareTo", &args)?;
    ordering(a.cmp(b))
}
