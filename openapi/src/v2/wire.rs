//! Protocol buffers' wire format, the little of it a writer needs.

/// A message being written: fields appended in any order.
#[derive(Default)]
pub(crate) struct Message {
    buf: Vec<u8>,
}

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LENGTH_DELIMITED: u64 = 2;

impl Message {
    pub fn new() -> Message {
        Message::default()
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn key(&mut self, field: u32, wire_type: u64) {
        self.varint((u64::from(field) << 3) | wire_type);
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    pub fn string(&mut self, field: u32, value: &str) {
        self.bytes(field, value.as_bytes());
    }

    pub fn bytes(&mut self, field: u32, value: &[u8]) {
        self.key(field, LENGTH_DELIMITED);
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    pub fn message(&mut self, field: u32, message: Message) {
        self.bytes(field, &message.buf);
    }

    pub fn bool(&mut self, field: u32, value: bool) {
        self.key(field, VARINT);
        self.varint(u64::from(value));
    }

    /// int64: negative numbers take ten bytes, as two's complement.
    pub fn int64(&mut self, field: u32, value: i64) {
        self.key(field, VARINT);
        self.varint(value as u64);
    }

    pub fn double(&mut self, field: u32, value: f64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_keys_varints_and_nested_messages() {
        let mut inner = Message::new();
        inner.int64(1, 150);
        let mut outer = Message::new();
        outer.string(2, "hi");
        outer.message(3, inner);
        outer.bool(4, true);
        outer.int64(5, -1);
        assert_eq!(
            outer.into_bytes(),
            [
                [0x12, 2, b'h', b'i'].as_slice(),
                &[0x1a, 3, 0x08, 0x96, 0x01],
                &[0x20, 1],
                &[0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ]
            .concat()
        );
    }
}
