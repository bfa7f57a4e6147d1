//! kube-apiserver's `--token-auth-file` (upstream's
//! k8s.io/apiserver/pkg/authentication/token/tokenfile): a CSV file of
//! `token,user,uid[,"group1,group2"]` lines, read once at start.
//!
//! Parsed as Go's encoding/csv reads it (what upstream uses): fields may be quoted (`""` is a
//! quote inside a quoted field, which may hold commas and line breaks), blank lines are
//! skipped, CRLF is LF, a quote inside an unquoted field is an error, and lines may have any
//! number of columns (3 or more; columns after the fourth are ignored). As upstream: a line
//! with an empty token is skipped with a warning, and a token given twice names the user of
//! its last line (with a warning). Stricter than upstream: an empty user name and a token
//! longer than [`MAX_TOKEN_BYTES`] fail start, and empty group names are dropped.
//!
//! Tokens are kept only as their SHA-256, and a presented token is looked up by its digest,
//! so the lookup's timing tells nothing about the tokens (no byte-by-byte comparison).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;
use tracing::warn;

use super::UserInfo;

/// The longest token looked up; a longer bearer token is refused without hashing it.
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;

#[derive(Debug, Error)]
pub enum TokenFileError {
    #[error("reading token file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("token file {path}, line {line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// The users of a token file, by the SHA-256 of their tokens.
#[derive(Debug, Default, Clone)]
pub struct TokenFile {
    users: HashMap<[u8; 32], UserInfo>,
}

impl TokenFile {
    /// Reads and parses `path`; any bad line fails with its line number.
    pub fn read(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read(path).map_err(|source| TokenFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(text).map_err(|e| TokenFileError::Invalid {
            path: path.to_path_buf(),
            line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count(),
            message: "not UTF-8".into(),
        })?;
        Self::parse(&text).map_err(|(line, message)| TokenFileError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        })
    }

    /// Parses the file's text; an error is `(line, message)`.
    pub fn parse(text: &str) -> Result<Self, (usize, String)> {
        let mut users = HashMap::new();
        for (line, record) in parse_csv(text)? {
            if record.len() < 3 {
                return Err((
                    line,
                    format!(
                        "must have at least 3 columns (token, user name, user uid), found {}",
                        record.len()
                    ),
                ));
            }
            let token = &record[0];
            if token.is_empty() {
                warn!(line, "empty token in the token file; line skipped");
                continue;
            }
            if token.len() > MAX_TOKEN_BYTES {
                return Err((line, format!("token longer than {MAX_TOKEN_BYTES} bytes")));
            }
            if record[1].is_empty() {
                return Err((line, "empty user name".into()));
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                extra: Default::default(),
            };
            if users.insert(digest(token.as_bytes()), user).is_some() {
                warn!(
                    line,
                    "duplicate token in the token file; this line's user is kept"
                );
            }
        }
        Ok(Self { users })
    }

    /// The user `token` names, as the file gives it (no group added).
    pub fn user(&self, token: &[u8]) -> Option<&UserInfo> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        self.users.get(&digest(token))
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// A CSV record: the line it starts on and its fields.
pub type Record = (usize, Vec<String>);

/// Go's encoding/csv with FieldsPerRecord = -1 and strict quotes: each record with the line
/// it starts on; an error is `(line, message)` with Go's wording.
pub fn parse_csv(text: &str) -> Result<Vec<Record>, (usize, String)> {
    let text = text.replace("\r\n", "\n");
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let mut records = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < n {
        if chars[i] == '\n' {
            // Blank lines are skipped.
            i += 1;
            line += 1;
            continue;
        }
        let start = line;
        let mut fields = Vec::new();
        loop {
            let mut field = String::new();
            if chars[i..].first() == Some(&'"') {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => {
                            return Err((start, "extraneous or missing \" in quoted-field".into()))
                        }
                        Some('"') if chars.get(i + 1) == Some(&'"') => {
                            field.push('"');
                            i += 2;
                        }
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some(c) => {
                            if *c == '\n' {
                                line += 1;
                            }
                            field.push(*c);
                            i += 1;
                        }
                    }
                }
                if !matches!(chars.get(i), None | Some(',') | Some('\n')) {
                    return Err((line, "extraneous or missing \" in quoted-field".into()));
                }
            } else {
                while let Some(c) = chars.get(i).filter(|c| **c != ',' && **c != '\n') {
                    if *c == '"' {
                        return Err((line, "bare \" in non-quoted field".into()));
                    }
                    field.push(*c);
                    i += 1;
                }
            }
            fields.push(field);
            if chars.get(i) == Some(&',') {
                i += 1;
                continue;
            }
            break;
        }
        if chars.get(i) == Some(&'\n') {
            i += 1;
            line += 1;
        }
        records.push((start, fields));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Vec<Record> {
        parse_csv(text).expect("csv")
    }

    fn users(text: &str) -> TokenFile {
        TokenFile::parse(text).expect("token file")
    }

    #[test]
    fn csv_as_go_reads_it() {
        assert_eq!(
            records("a,b,c\n\n\"x,y\",\"say \"\"hi\"\"\",\r\nlast"),
            vec![
                (1, vec!["a".into(), "b".into(), "c".into()]),
                (3, vec!["x,y".into(), "say \"hi\"".into(), String::new()]),
                (4, vec!["last".into()]),
            ]
        );
        // A quoted field may span lines; the next record's line counts them.
        assert_eq!(
            records("t,u,\"multi\nline\"\nnext,v,w\n"),
            vec![
                (1, vec!["t".into(), "u".into(), "multi\nline".into()]),
                (3, vec!["next".into(), "v".into(), "w".into()]),
            ]
        );
        assert_eq!(records(""), Vec::<Record>::new());
        assert_eq!(records(",,"), vec![(1, vec![String::new(); 3])]);
        // Spaces are kept, as Go keeps them.
        assert_eq!(records(" a , b ")[0].1, [" a ", " b "]);
    }

    #[test]
    fn csv_errors() {
        let err = |text: &str| parse_csv(text).expect_err(text);
        assert_eq!(err("a,b\"c,d").0, 1);
        assert!(err("a,b\"c,d").1.contains("bare \""));
        assert_eq!(err("ok,ok,ok\n\"unterminated,x,y\n").0, 2);
        assert!(err("\"a\"b,c,d").1.contains("extraneous or missing \""));
        assert!(err("a, \"b\",c").1.contains("bare \""));
    }

    #[test]
    fn three_and_four_columns() {
        let file = users(
            "tok1,alice,uid1\ntok2,bob,uid2,\"g1,g2\"\ntok3,carol,,g3,ignored,too\ntok4,dave,uid4,\n",
        );
        assert_eq!(file.len(), 4);
        let alice = file.user(b"tok1").expect("alice");
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "uid1"));
        assert!(alice.groups.is_empty(), "no group added by the file");
        assert_eq!(file.user(b"tok2").expect("bob").groups, ["g1", "g2"]);
        let carol = file.user(b"tok3").expect("carol");
        assert_eq!(
            (carol.uid.as_str(), carol.groups.as_slice()),
            ("", &["g3".to_string()][..])
        );
        assert!(file.user(b"tok4").expect("dave").groups.is_empty());
        assert!(file.user(b"tok").is_none());
        assert!(file.user(b"").is_none());
    }

    #[test]
    fn skipped_and_repeated_tokens() {
        let file = users(",nobody,0\ntok,first,1\ntok,second,2\n");
        assert_eq!(file.len(), 1);
        assert_eq!(file.user(b"tok").expect("user").name, "second");
        assert!(file.user(b"").is_none());
    }

    #[test]
    fn bad_lines() {
        let err = |text: &str| TokenFile::parse(text).expect_err(text);
        let (line, message) = err("tok,alice,uid\ntok2,bob\n");
        assert_eq!(line, 2);
        assert!(
            message.contains("at least 3 columns") && message.contains("found 2"),
            "{message}"
        );
        assert_eq!(err("just-a-token").0, 1);
        assert_eq!(err("tok,,uid").1, "empty user name");
        assert_eq!(err("a,b,c\n\"tok,alice,uid").0, 2);
        let long = format!("{},alice,uid", "x".repeat(MAX_TOKEN_BYTES + 1));
        assert!(err(&long).1.contains("longer than"));
    }

    #[test]
    fn read_names_the_file_and_line() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "tok,alice,uid\nbroken\n").expect("write");
        let message = TokenFile::read(&path).expect_err("bad").to_string();
        assert!(
            message.contains("tokens.csv")
                && message.contains("line 2")
                && message.contains("3 columns"),
            "{message}"
        );
        let missing = TokenFile::read(&dir.path().join("none.csv")).expect_err("missing");
        assert!(missing.to_string().contains("none.csv"), "{missing}");
        std::fs::write(&path, b"tok,al\xffice,uid\n").expect("write");
        assert!(TokenFile::read(&path)
            .expect_err("not UTF-8")
            .to_string()
            .contains("not UTF-8"));
    }
}
