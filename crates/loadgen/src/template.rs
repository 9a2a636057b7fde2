//! A request packed once; per request only the digits that differ (a user
//! number, a request number, a lock token) are overwritten in place.
//!
//! The caller builds the request with placeholder fields: a run of one
//! [`Field`]'s placeholder byte, as wide as the largest number of the run.
//! Numbers are written zero-padded to that width, so every request has the
//! same length and no length prefix (RESP's `$n`, HTTP's `Content-Length`)
//! ever changes — the way redis-benchmark fills its `__rand_int__` fields.
//!
//! May import: resp.

use crate::resp::{self, Digits};

/// One kind of per-request number in a template, told apart by its
/// placeholder byte (a control byte no key, id or header carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field(u8);

impl Field {
    /// Field `id`, 1 to 8.
    pub const fn new(id: u8) -> Field {
        assert!(id >= 1 && id <= 8, "a template field id is 1 to 8");
        Field(id)
    }

    /// `width` placeholder bytes of this field: the room its number is written in.
    pub fn placeholder(self, width: usize) -> Vec<u8> {
        vec![self.0; width]
    }
}

/// One packed request and where its numbers go.
#[derive(Debug, Clone)]
pub struct Template {
    packed: Vec<u8>,
    /// (offset, width, which) of each number field.
    fields: Vec<(usize, usize, Field)>,
}

impl Template {
    /// `packed` (placeholder runs of `fields` included), its fields found.
    pub fn new(packed: Vec<u8>, fields: &[Field]) -> Template {
        let mut found = Vec::new();
        let mut at = 0;
        while at < packed.len() {
            let Some(&field) = fields.iter().find(|f| f.0 == packed[at]) else {
                at += 1;
                continue;
            };
            let width = packed[at..]
                .iter()
                .take_while(|&&b| b == packed[at])
                .count();
            found.push((at, width, field));
            at += width;
        }
        Template {
            packed,
            fields: found,
        }
    }

    /// The RESP command of `words` (placeholder runs included).
    pub fn resp(words: &[Vec<u8>], fields: &[Field]) -> Template {
        let words: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        Template::new(resp::command(&words), fields)
    }

    /// Append the request to `out`, `value` giving each field's number
    /// (its last digits when it is wider than the field).
    pub fn write(&self, value: impl Fn(Field) -> u64, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.packed);
        for &(offset, width, field) in &self.fields {
            let digits = Digits::new(value(field));
            let digits = digits.as_bytes();
            let slot = &mut out[start + offset..start + offset + width];
            let pad = width.saturating_sub(digits.len());
            slot[..pad].fill(b'0');
            slot[pad..].copy_from_slice(&digits[digits.len() - (width - pad)..]);
        }
    }

    /// Bytes per request.
    pub fn len(&self) -> usize {
        self.packed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }
}

/// Decimal digits of `number`: the width its field needs.
pub fn width(number: u64) -> usize {
    Digits::new(number).as_bytes().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: Field = Field::new(1);
    const REQUEST: Field = Field::new(2);

    #[test]
    fn numbers_are_written_zero_padded_in_place() {
        let words = [
            b"EVALSHA".to_vec(),
            b"sha".to_vec(),
            [b"rate:u".as_slice(), &USER.placeholder(3)].concat(),
            [b"o-".as_slice(), &REQUEST.placeholder(5)].concat(),
        ];
        let template = Template::resp(&words, &[USER, REQUEST]);
        let mut out = b"before".to_vec();
        template.write(|f| if f == USER { 234 } else { 1234 }, &mut out);
        let expected = redis::cmd("EVALSHA")
            .arg("sha")
            .arg("rate:u234")
            .arg("o-01234")
            .get_packed_command();
        assert_eq!(&out[6..], expected.as_slice());
        assert_eq!(template.len(), expected.len());
        out.clear();
        template.write(|_| 7, &mut out);
        assert!(out.windows(9).any(|w| w == b"rate:u007"));
        // Wider than its field: the last digits.
        out.clear();
        template.write(|_| 98_765, &mut out);
        assert!(out.windows(9).any(|w| w == b"rate:u765"));
    }

    #[test]
    fn only_the_fields_asked_for_are_filled() {
        let packed = [
            b"a".as_slice(),
            &USER.placeholder(2),
            &REQUEST.placeholder(1),
        ]
        .concat();
        let template = Template::new(packed, &[USER]);
        let mut out = Vec::new();
        template.write(|_| 5, &mut out);
        assert_eq!(out, [b"a05".as_slice(), &REQUEST.placeholder(1)].concat());
        assert_eq!((width(0), width(9), width(10)), (1, 1, 2));
    }
}
