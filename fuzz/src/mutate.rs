//! A small deterministic mutator for the stable replay (`tests/replay.rs`), for machines
//! without nightly and cargo-fuzz: byte flips, insertions of tokens the grammars care about,
//! deletions, duplications and splices of corpus entries, from a fixed seed so a failure
//! reproduces. No coverage feedback: it is a smoke test between cargo-fuzz campaigns.

/// Tokens of the inputs' grammars (JSON, YAML, selectors, paths, queries, CEL, JWTs).
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"\n",
    b"\n%%\n",
    b" ",
    b"-",
    b"/",
    b"..",
    b"%2F",
    b"%",
    b"?",
    b"&",
    b"=",
    b"==",
    b"!=",
    b"!",
    b"(",
    b")",
    b" in ",
    b" notin ",
    b"null",
    b"true",
    b"0",
    b"-1",
    b"1e400",
    b"18446744073709551616",
    b"\\u0000",
    b"\0",
    b"\xff",
    b"\xe2\x82",
    b"&&",
    b"||",
    b".",
    b"size()",
    b"all(x, ",
    b"$patch",
    b"$retainKeys",
    b"op",
    b"path",
    b"~1",
    b"eyJ",
    b"k8s\0",
    b"- ",
    b"&a",
    b"*a",
    b"!!binary",
    b"<<: ",
];

/// xorshift64*: enough randomness, and the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: &str) -> Self {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for b in seed.bytes() {
            state = (state ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
        Rng(state | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// One to four mutations of `input`; `others` are the corpus, spliced in.
pub fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(6) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                out.splice(at..at, token.iter().copied());
            }
            2 if !out.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            3 if !out.is_empty() => {
                let start = rng.below(out.len());
                let end = (start + 1 + rng.below(32)).min(out.len());
                let piece = out[start..end].to_vec();
                out.splice(at..at, piece);
            }
            4 if !others.is_empty() => {
                let other = &others[rng.below(others.len())];
                let start = rng.below(other.len() + 1);
                let end = (start + rng.below(64)).min(other.len());
                out.splice(at..at, other[start..end].iter().copied());
            }
            _ => out.truncate(at),
        }
    }
    out
}
