//! Exact quantities for quota arithmetic (upstream's resource.Quantity, as far as quota uses
//! it): sums must not drift as floats do, and the sums written to `status.used` and shown in
//! refusals must print as Go prints them (`1536Mi`, `2k`, `500m`).

use std::cmp::Ordering;
use std::fmt;

/// A value in nano-units, and whether it was written with a binary suffix (Go's BinarySI
/// format, which its printing keeps).
#[derive(Clone, Copy, Debug, Default)]
pub struct Quantity {
    nanos: i128,
    binary: bool,
}

const NANO: i128 = 1_000_000_000;

impl Quantity {
    /// A whole number in Go's DecimalSI format.
    pub fn count(n: i64) -> Self {
        Self {
            nanos: i128::from(n) * NANO,
            binary: false,
        }
    }

    /// Parses Kubernetes' quantity syntax (`100m`, `1.5Gi`, `1e3`); None when it is not one.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let (multiplier, binary): (i128, bool) = match suffix {
            "" => (NANO, false),
            "n" => (1, false),
            "u" => (1_000, false),
            "m" => (1_000_000, false),
            "k" => (NANO * 1_000, false),
            "M" => (NANO * 1_000_000, false),
            "G" => (NANO * 1_000_000_000, false),
            "T" => (NANO * 1_000_000_000_000, false),
            "P" => (NANO * 1_000_000_000_000_000, false),
            "E" => (NANO * 1_000_000_000_000_000_000, false),
            "Ki" => (NANO << 10, true),
            "Mi" => (NANO << 20, true),
            "Gi" => (NANO << 30, true),
            "Ti" => (NANO << 40, true),
            "Pi" => (NANO << 50, true),
            "Ei" => (NANO << 60, true),
            exp => {
                let e: i32 = exp.strip_prefix(['e', 'E'])?.parse().ok()?;
                if !(-9..=18).contains(&e) {
                    return None;
                }
                let m = if e >= 0 {
                    NANO.checked_mul(10i128.checked_pow(e.unsigned_abs())?)?
                } else {
                    NANO / 10i128.pow(e.unsigned_abs())
                };
                (m, false)
            }
        };
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let mut nanos = whole.checked_mul(multiplier)?;
        // The fraction's digits, each a tenth of the one before; what falls below a nano-unit
        // rounds up, as Go rounds a quantity it cannot hold exactly.
        let mut scale = multiplier;
        let mut rest_nonzero = false;
        for digit in fraction.bytes() {
            let d = i128::from(digit - b'0');
            if scale >= 10 {
                scale /= 10;
                nanos = nanos.checked_add(d.checked_mul(scale)?)?;
            } else if d != 0 {
                rest_nonzero = true;
            }
        }
        if rest_nonzero {
            nanos += 1;
        }
        Some(Self {
            nanos: if negative { -nanos } else { nanos },
            binary,
        })
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Go's Add: a zero takes the format of what is added to it.
    pub fn add(&mut self, other: &Quantity) {
        if self.nanos == 0 {
            self.binary = other.binary;
        }
        self.nanos = self.nanos.saturating_add(other.nanos);
    }

    pub fn sub(&mut self, other: &Quantity) {
        if self.nanos == 0 {
            self.binary = other.binary;
        }
        self.nanos = self.nanos.saturating_sub(other.nanos);
    }

    /// The value as a whole number, when it is one that fits an i64 (Go's AsInt64).
    pub fn as_i64(&self) -> Option<i64> {
        if self.nanos % NANO != 0 {
            return None;
        }
        i64::try_from(self.nanos / NANO).ok()
    }

    /// The value as the nearest double (Go's AsApproximateFloat64).
    pub fn as_f64(&self) -> f64 {
        self.nanos as f64 / NANO as f64
    }

    /// -1, 0 or 1 as the value is negative, zero or positive.
    pub fn signum(&self) -> i64 {
        self.nanos.signum() as i64
    }

    /// The value in thousandths of a unit, rounded up (Go's MilliValue).
    pub fn milli_value(&self) -> i128 {
        const MILLI: i128 = 1_000_000;
        let whole = self.nanos.div_euclid(MILLI);
        if self.nanos.rem_euclid(MILLI) == 0 {
            whole
        } else {
            whole + 1
        }
    }

    /// A quantity of `milli` thousandths (Go's NewMilliQuantity), printed in `binary`
    /// format when asked (memory) or decimal.
    pub fn from_milli(milli: i128, binary: bool) -> Self {
        Self {
            nanos: milli.saturating_mul(1_000_000),
            binary,
        }
    }

    /// The value rounded up to whole units (what `MilliValue`/`Value` callers compare).
    pub fn value(&self) -> i128 {
        let whole = self.nanos.div_euclid(NANO);
        if self.nanos.rem_euclid(NANO) == 0 {
            whole
        } else {
            whole + 1
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// Go's canonical form: a binary quantity of at least 1024 whole units with the largest
/// binary suffix that divides it; otherwise the largest decimal suffix (n, u, m, none, k, M,
/// G, T, P, E) that leaves a whole number.
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nanos;
        if self.binary && n.abs() >= 1024 * NANO && n % NANO == 0 {
            let mut units = n / NANO;
            let mut power = 0;
            while units % 1024 == 0 && power < 6 {
                units /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return write!(f, "{units}{suffix}");
        }
        if n == 0 {
            return f.write_str("0");
        }
        const SUFFIXES: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
        let mut value = n;
        let mut index = 0;
        while index + 1 < SUFFIXES.len() && value % 1000 == 0 {
            value /= 1000;
            index += 1;
        }
        write!(f, "{value}{}", SUFFIXES[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).expect(text)
    }

    #[test]
    fn prints_as_go_prints_canonical_quantities() {
        for (given, printed) in [
            ("1", "1"),
            ("500m", "500m"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("2000m", "2"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1000Ki", "1000Ki"),
            ("512", "512"),
            ("1e3", "1k"),
            ("100M", "100M"),
            ("0", "0"),
            ("-1", "-1"),
        ] {
            assert_eq!(q(given).to_string(), printed, "{given}");
        }
    }

    #[test]
    fn sums_keep_the_first_operands_format() {
        let mut sum = Quantity::default();
        sum.add(&q("1Gi"));
        sum.add(&q("512Mi"));
        assert_eq!(sum.to_string(), "1536Mi");
        let mut cpu = q("250m");
        cpu.add(&q("750m"));
        assert_eq!(cpu.to_string(), "1");
        assert!(q("1Gi") > q("1G"));
        assert_eq!(q("1000m"), q("1"));
    }

    #[test]
    fn bad_text_is_no_quantity() {
        for bad in ["", "abc", "1Zi", "1..2", ".", "1e99", "--1"] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }
}
