//! Many generated objects, made of the characters and shapes that trouble encoders: every
//! format must stream them exactly as the whole list encodes.

use serde_json::{json, Map, Number, Value};

use super::*;

/// A small deterministic generator (xorshift64*): the same objects on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, of: &'a [T]) -> &'a T {
        &of[self.below(of.len())]
    }
}

const CHARS: &[char] = &[
    'a', 'b', 'z', 'K', '0', '7', ' ', ' ', '\n', '\n', '\t', '\r', '"', '\'', '\\', ':', '#', '-',
    '?', '!', '&', '*', '{', '}', '[', ']', ',', '|', '>', '%', '@', '`', '.', '~', '=', 'é', 'ß',
    '中', '😀', '\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\u{a0}', '\u{2028}', '\u{2029}',
    '\u{feff}', '\u{fffd}',
];

const WORDS: &[&str] = &[
    "",
    "true",
    "false",
    "null",
    "yes",
    "No",
    "~",
    "0",
    "012",
    "1e3",
    "-1.5",
    "0x1f",
    ".inf",
    "---",
    "...",
    "- a",
    "a: b",
    "#c",
    "  ",
    "\n",
    "\n\n",
    "a\n",
    "a\n\n",
    " a\n",
    "a \n",
    "2024-05-01T11:58:20Z",
    "=",
    "<<",
];

fn string(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => rng.pick(WORDS).to_string(),
        1 => "w".repeat(rng.below(150)),
        _ => (0..rng.below(14)).map(|_| *rng.pick(CHARS)).collect(),
    }
}

fn number(rng: &mut Rng) -> Value {
    match rng.below(5) {
        0 => Value::from(rng.next() as i64),
        1 => Value::from(rng.next()),
        2 => Value::from(rng.below(1000) as i64 - 500),
        3 => Number::from_f64(f64::from_bits(rng.next() >> 2)).map_or(Value::Null, Value::Number),
        _ => Value::from(rng.below(10_000) as f64 / 8.0),
    }
}

fn value(rng: &mut Rng, depth: usize) -> Value {
    let nested = if depth < 4 { 3 } else { 0 };
    match rng.below(7 + nested) {
        0..=2 => Value::String(string(rng)),
        3 => number(rng),
        4 => Value::Bool(rng.below(2) == 0),
        5 => Value::Null,
        6 => match rng.below(2) {
            0 => json!({}),
            _ => json!([]),
        },
        7 => Value::Array((0..rng.below(4)).map(|_| value(rng, depth + 1)).collect()),
        _ => Value::Object(map(rng, depth + 1)),
    }
}

fn map(rng: &mut Rng, depth: usize) -> Map<String, Value> {
    (0..rng.below(5))
        .map(|_| (string(rng), value(rng, depth)))
        .collect()
}

fn object(rng: &mut Rng, i: usize) -> Value {
    let mut obj = map(rng, 1);
    let created = rng.pick(&["2024-05-01T11:00:00Z", "2020-01-01T00:00:00Z", "soon"]);
    obj.insert(
        "metadata".into(),
        json!({"name": format!("obj-{i}"), "creationTimestamp": created, "labels": map(rng, 3)}),
    );
    Value::Object(obj)
}

#[tokio::test]
async fn generated_objects_stream_as_the_whole_list_encodes() {
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let info = info("configmaps");
    for list in 0..150 {
        let items = (0..rng.below(12)).map(|i| object(&mut rng, i)).collect();
        let mut metadata = json!({"resourceVersion": (rng.next() % 100_000).to_string()});
        if list % 3 == 0 {
            metadata["continue"] = Value::String(string(&mut rng));
            metadata["remainingItemCount"] = Value::from(rng.below(50));
        }
        assert_identical(&Parts::new("ConfigMapList", metadata, items), &info).await;
    }
}
