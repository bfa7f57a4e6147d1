//! Why a body is not JSON, in the words of Go's encoding/json scanner: kube-apiserver reads a
//! body's apiVersion and kind with `json.Unmarshal` before anything else, so a YAML file sent
//! as JSON (`kubectl create --raw -f pod.yaml`) is refused with Go's syntax error (`invalid
//! character 'a' looking for beginning of value`). Only run on the error path, after serde
//! refused the body; serde's own message is kept for what Go's scanner would accept.

/// How deep the scan nests before it gives up (the scan recurses; serde refused anything
/// deeper than 128 levels already, with its own message).
const MAX_DEPTH: usize = 256;

/// Go's syntax error for `data`, or None when its scanner would accept the document (or it
/// nests too deep to tell).
pub fn go_syntax_error(data: &[u8]) -> Option<String> {
    let mut scan = Scanner {
        data,
        at: 0,
        depth: 0,
    };
    match scan.document() {
        Ok(()) | Err(Problem::TooDeep) => None,
        Err(Problem::End) => Some("unexpected end of JSON input".into()),
        Err(Problem::Char(c, context)) => {
            Some(format!("invalid character {} {context}", quote_char(c)))
        }
        Err(Problem::Literal(c, literal, want)) => Some(format!(
            "invalid character {} in literal {literal} (expecting {})",
            quote_char(c),
            quote_char(want)
        )),
    }
}

/// The character as Go's scanner quotes it (`'a'`, `'\n'`, `'"'`, `'\''`).
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".into(),
        b'"' => "'\"'".into(),
        b'\\' => r"'\\'".into(),
        b'\n' => r"'\n'".into(),
        b'\r' => r"'\r'".into(),
        b'\t' => r"'\t'".into(),
        0x07 => r"'\a'".into(),
        0x08 => r"'\b'".into(),
        0x0c => r"'\f'".into(),
        0x0b => r"'\v'".into(),
        c if c < 0x20 || c == 0x7f => format!(r"'\x{c:02x}'"),
        // Go quotes the byte as the rune of the same number: printable Latin-1 as itself.
        c if c >= 0xa1 && c != 0xad => format!("'{}'", char::from(c)),
        c if c >= 0x80 => format!(r"'\u{:04x}'", u32::from(c)),
        c => format!("'{}'", char::from(c)),
    }
}

enum Problem {
    End,
    /// The character, and where the scanner was.
    Char(u8, &'static str),
    /// The character, in which literal, and the letter expected instead.
    Literal(u8, &'static str, u8),
    /// Nested beyond MAX_DEPTH.
    TooDeep,
}

struct Scanner<'a> {
    data: &'a [u8],
    at: usize,
    depth: usize,
}

type Scan = Result<(), Problem>;

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.at).copied()
    }

    fn next(&mut self) -> Result<u8, Problem> {
        let c = self.peek().ok_or(Problem::End)?;
        self.at += 1;
        Ok(c)
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn document(&mut self) -> Scan {
        self.skip_space();
        self.value()?;
        self.skip_space();
        match self.peek() {
            None => Ok(()),
            Some(c) => Err(Problem::Char(c, "after top-level value")),
        }
    }

    fn value(&mut self) -> Scan {
        match self.next()? {
            b'{' | b'[' if self.depth >= MAX_DEPTH => Err(Problem::TooDeep),
            b'{' => self.nested(Self::object),
            b'[' => self.nested(Self::array),
            b'"' => self.string(),
            b'-' => self.number_after_minus(),
            c @ b'0'..=b'9' => self.number(c),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            c => Err(Problem::Char(c, "looking for beginning of value")),
        }
    }

    fn nested(&mut self, scan: fn(&mut Self) -> Scan) -> Scan {
        self.depth += 1;
        let result = scan(self);
        self.depth -= 1;
        result
    }

    fn object(&mut self) -> Scan {
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            match self.next()? {
                b'"' => self.string()?,
                c => {
                    return Err(Problem::Char(
                        c,
                        "looking for beginning of object key string",
                    ))
                }
            }
            self.skip_space();
            match self.next()? {
                b':' => {}
                c => return Err(Problem::Char(c, "after object key")),
            }
            self.skip_space();
            self.value()?;
            self.skip_space();
            match self.next()? {
                b',' => self.skip_space(),
                b'}' => return Ok(()),
                c => return Err(Problem::Char(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Scan {
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.skip_space();
            self.value()?;
            self.skip_space();
            match self.next()? {
                b',' => {}
                b']' => return Ok(()),
                c => return Err(Problem::Char(c, "after array element")),
            }
        }
    }

    /// After the opening quote.
    fn string(&mut self) -> Scan {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(Problem::Char(
                                    c,
                                    "in \\u hexadecimal character escape",
                                ));
                            }
                        }
                    }
                    c => return Err(Problem::Char(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(Problem::Char(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn number_after_minus(&mut self) -> Scan {
        match self.next()? {
            c @ b'0'..=b'9' => self.number(c),
            c => Err(Problem::Char(c, "in numeric literal")),
        }
    }

    /// After the first digit. A number ends at whatever is not part of it, which the caller
    /// then judges (Go's scanner does the same).
    fn number(&mut self, first: u8) -> Scan {
        if first != b'0' {
            self.digits();
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(Problem::Char(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let mut c = self.next()?;
            if c == b'+' || c == b'-' {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(Problem::Char(c, "in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    /// After the literal's first letter.
    fn literal(&mut self, literal: &'static str) -> Scan {
        for &want in &literal.as_bytes()[1..] {
            let c = self.next()?;
            if c != want {
                return Err(Problem::Literal(c, literal, want));
            }
        }
        Ok(())
    }
}

/// The start of a body for an error message, as upstream's summarizeData gives it: a JSON
/// object's first 30 bytes as text, anything else in hex, `...` when cut.
pub fn summary(data: &[u8]) -> String {
    const MAX: usize = 30;
    let (shown, cut) = if data.len() > MAX {
        (&data[..MAX], " ...")
    } else {
        (data, "")
    };
    match data.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{cut}", String::from_utf8_lossy(shown)),
        Some(_) => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{cut}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        go_syntax_error(text.as_bytes()).unwrap_or_default()
    }

    #[test]
    fn yaml_and_broken_documents_get_gos_words() {
        assert_eq!(
            error("apiVersion: v1\nkind: Pod\n"),
            "invalid character 'a' looking for beginning of value"
        );
        assert_eq!(error(""), "unexpected end of JSON input");
        assert_eq!(error("{\"a\": 1"), "unexpected end of JSON input");
        assert_eq!(error("{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(
            error("{\"a\": 1 \"b\": 2}"),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(
            error("{a: 1}"),
            "invalid character 'a' looking for beginning of object key string"
        );
        assert_eq!(error("[1 2]"), "invalid character '2' after array element");
        assert_eq!(error("{} x"), "invalid character 'x' after top-level value");
        assert_eq!(
            error("{\"a\": tru}"),
            "invalid character '}' in literal true (expecting 'e')"
        );
        assert_eq!(
            error("{\"a\": nul}"),
            "invalid character '}' in literal null (expecting 'l')"
        );
        assert_eq!(
            error("{\"a\": -x}"),
            "invalid character 'x' in numeric literal"
        );
        assert_eq!(
            error("{\"a\": 1.}"),
            "invalid character '}' after decimal point in numeric literal"
        );
        assert_eq!(
            error("{\"a\": 1e}"),
            "invalid character '}' in exponent of numeric literal"
        );
        assert_eq!(
            error("{\"a\": \"\\q\"}"),
            "invalid character 'q' in string escape code"
        );
        assert_eq!(
            error("{\"a\": \"x\ny\"}"),
            "invalid character '\\n' in string literal"
        );
        assert_eq!(
            error("{\"a\": 01}"),
            "invalid character '1' after object key:value pair"
        );
        assert_eq!(
            error("'x'"),
            r"invalid character '\'' looking for beginning of value"
        );
    }

    #[test]
    fn deep_documents_are_not_scanned_past_a_bound() {
        let deep = "[".repeat(100_000);
        assert_eq!(go_syntax_error(deep.as_bytes()), None);
        let shallow = format!("{}x", "[".repeat(10));
        assert_eq!(
            go_syntax_error(shallow.as_bytes()).as_deref(),
            Some("invalid character 'x' looking for beginning of value")
        );
    }

    #[test]
    fn documents_gos_scanner_accepts_have_no_syntax_error() {
        for ok in [
            "{}",
            " {\"a\": [1, -2.5e+3, true, false, null, \"\\u00e9\\n\"]} \n",
            "[]",
            "0",
        ] {
            assert_eq!(go_syntax_error(ok.as_bytes()), None, "{ok}");
        }
    }

    #[test]
    fn summaries_show_objects_as_text_and_the_rest_in_hex() {
        assert_eq!(summary(b""), "<empty>");
        assert_eq!(summary(b"{\"a\":1}"), "{\"a\":1}");
        assert_eq!(
            summary(b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{}}"),
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod ..."
        );
        assert_eq!(summary(b"ab"), "6162");
        assert_eq!(
            summary(b"apiVersion: v1\nkind: Pod\nmetadata:\n"),
            "61706956657273696f6e3a2076310a6b696e643a20506f640a6d65746164 ..."
        );
    }
}
