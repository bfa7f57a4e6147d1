//! The label selector lexer and recursive-descent parser, following upstream's grammar and
//! token rules so that the same inputs are accepted, and rejected with the same messages:
//!
//! ```text
//! selector    ::= requirement | requirement "," selector
//! requirement ::= ["!"] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | ">" | "<") VALUE ]
//! ```

use super::requirement::{LabelOperator, LabelRequirement};
use crate::validation::{is_qualified_name, quote};
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
    /// Symbols that form no operator; the literal carries upstream's lexer message.
    Error,
}

struct Item {
    token: Token,
    literal: String,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn symbol(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn lex(input: &str) -> Vec<Item> {
    // Upstream's lexer reads a NUL byte as the end of input, ignoring whatever follows.
    let input = input.split('\0').next().unwrap_or_default();
    let bytes = input.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        while bytes.get(pos).copied().is_some_and(is_whitespace) {
            pos += 1;
        }
        let Some(&first) = bytes.get(pos) else {
            items.push(Item {
                token: Token::EndOfString,
                literal: String::new(),
            });
            return items;
        };
        let start = pos;
        if is_special(first) {
            // The longest run of symbols that is still one operator: `!=` is one token, `=(`
            // two. Every single symbol is an operator, so `best` is only None in theory.
            let mut best = None;
            let mut end = pos;
            while bytes.get(end).copied().is_some_and(is_special) {
                match symbol(&input[start..=end]) {
                    Some(token) => best = Some((token, end + 1)),
                    None => break,
                }
                end += 1;
            }
            let (token, stop) = best.unwrap_or((Token::Error, start + 1));
            let literal = match token {
                Token::Error => format!("error expected: keyword found '{}'", &input[start..stop]),
                _ => input[start..stop].to_string(),
            };
            items.push(Item { token, literal });
            pos = stop;
        } else {
            while bytes
                .get(pos)
                .is_some_and(|&b| !is_special(b) && !is_whitespace(b))
            {
                pos += 1;
            }
            let literal = &input[start..pos];
            let token = match literal {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier,
            };
            items.push(Item {
                token,
                literal: literal.to_string(),
            });
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    /// Where a value may stand, `in` and `notin` are plain identifiers: `in in (notin)`.
    Values,
}

struct Parser {
    items: Vec<Item>,
    position: usize,
}

impl Parser {
    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = match self.items.get(self.position) {
            Some(item) => (item.token, item.literal.clone()),
            None => (Token::EndOfString, String::new()),
        };
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    fn requirement(&mut self) -> Result<LabelRequirement, String> {
        let (key, unary) = self.key_and_inferred_operator()?;
        if let Some(operator) = unary {
            return LabelRequirement::new(&key, operator, Vec::new()).map_err(|e| e.0);
        }
        let operator = self.operator()?;
        let values = match operator {
            LabelOperator::In | LabelOperator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        LabelRequirement::new(&key, operator, values.into_iter().collect()).map_err(|e| e.0)
    }

    /// The key, and Exists / DoesNotExist when no binary operator follows it.
    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<LabelOperator>), String> {
        let mut unary = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            unary = Some(LabelOperator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errs = is_qualified_name(&literal);
        if !errs.is_empty() {
            // Upstream reports this under a nil field path, printed as "<nil>".
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                quote(&literal),
                errs.join("; ")
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        if unary.is_none() && matches!(next, Token::EndOfString | Token::Comma) {
            unary = Some(LabelOperator::Exists);
        }
        Ok((literal, unary))
    }

    fn operator(&mut self) -> Result<LabelOperator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => LabelOperator::In,
            Token::Equals => LabelOperator::Equals,
            Token::DoubleEquals => LabelOperator::DoubleEquals,
            Token::GreaterThan => LabelOperator::GreaterThan,
            Token::LessThan => LabelOperator::LessThan,
            Token::NotIn => LabelOperator::NotIn,
            Token::NotEquals => LabelOperator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ))
            }
        })
    }

    /// `(x,y,z)`: a set, so values come out sorted and deduplicated; empty items are "".
    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let set = self.identifiers()?;
                let (token, _) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    set.insert(literal);
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{next_literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // `(,a`, `a,,b` and `a,)` all hold the empty value.
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    match next {
                        Token::ClosedPar => {
                            set.insert(String::new());
                            return Ok(set);
                        }
                        Token::Comma => {
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            return Ok(BTreeSet::from([literal]));
        }
        Err(format!("found '{literal}', expected: identifier"))
    }
}

/// Parses a selector string into its requirements, in written order.
pub(super) fn parse(selector: &str) -> Result<Vec<LabelRequirement>, String> {
    let mut parser = Parser {
        items: lex(selector),
        position: 0,
    };
    let mut requirements = Vec::new();
    loop {
        let (token, literal) = parser.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::DoesNotExist => {
                let requirement = parser
                    .requirement()
                    .map_err(|err| format!("unable to parse requirement: {err}"))?;
                requirements.push(requirement);
                let (token, literal) = parser.consume(Context::Values);
                match token {
                    Token::EndOfString => return Ok(requirements),
                    Token::Comma => {
                        let (next, next_literal) = parser.lookahead(Context::Values);
                        if next != Token::Identifier && next != Token::DoesNotExist {
                            return Err(format!(
                                "found '{next_literal}', expected: identifier after ','"
                            ));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "found '{literal}', expected: ',' or 'end of string'"
                        ))
                    }
                }
            }
            Token::EndOfString => return Ok(requirements),
            _ => {
                return Err(format!(
                    "found '{literal}', expected: !, identifier, or 'end of string'"
                ))
            }
        }
    }
}
