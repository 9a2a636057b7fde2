//! The pre-queue's shuffle: everyone who joined before `starts_at` gets a
//! uniformly random place among them, from a seed whose SHA-256 is published
//! before the sale and the seed itself after the shuffle, so anyone can
//! re-run it and get the same order (docs/waiting-room.md, "Pre-queue").
//!
//! The procedure, exactly (so it can be reimplemented anywhere):
//! 1. the seed is 32 bytes; the RNG is ChaCha20 seeded with them
//!    (`rand_chacha::ChaCha20Rng::from_seed`), read as 64-bit words (`next_u64`);
//! 2. a uniform index below `bound` takes words until one is below
//!    `2^64 − (2^64 mod bound)` (rejection, so no index is favoured) and is
//!    that word `mod bound`;
//! 3. Fisher–Yates (Durstenfeld): for i from n − 1 down to 1, swap the
//!    entries at i and at a uniform index below i + 1;
//! 4. the input is the pre-queue in join order (positions 1..n as joined,
//!    `…:line`), the output's k-th entry gets final position k.
//!
//! Not Redis's SPOP or SRANDMEMBER: their picks depend on the set's hash
//! table layout and are not uniform, and they cannot be re-run.

use anyhow::{Result, bail};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

/// A shuffle seed: 32 bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Seed(pub [u8; 32]);

impl std::fmt::Debug for Seed {
    // Never printed by accident before the shuffle: only its hash.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seed(sha256 {})", self.sha256_hex())
    }
}

impl Seed {
    /// A fresh seed from the thread's CSPRNG (seeded by the operating system).
    pub(crate) fn generate() -> Seed {
        Seed(rand::random())
    }

    /// The seed as 64 hex digits.
    pub fn hex(&self) -> String {
        hex(&self.0)
    }

    /// SHA-256 of the 32 seed bytes, as 64 hex digits: what is published first.
    pub fn sha256_hex(&self) -> String {
        hex(&Sha256::digest(self.0))
    }

    /// A seed from its 64 hex digits.
    pub fn from_hex(text: &str) -> Result<Seed> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("a shuffle seed is 64 hex digits, got {:?}", text);
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)?;
        }
        Ok(Seed(bytes))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A uniform index below `bound` (≥ 1), by rejection: see the module docs.
fn below(rng: &mut ChaCha20Rng, bound: u64) -> u64 {
    let reject_from = u64::MAX - (u64::MAX - bound + 1) % bound;
    loop {
        let word = rng.next_u64();
        if word <= reject_from {
            return word % bound;
        }
    }
}

/// Shuffle `entries` in place, the same way for the same seed everywhere.
pub fn shuffle<T>(entries: &mut [T], seed: &Seed) {
    let mut rng = ChaCha20Rng::from_seed(seed.0);
    for i in (1..entries.len()).rev() {
        let j = below(&mut rng, i as u64 + 1) as usize;
        entries.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_order_and_another_seed_another() {
        let seed = Seed([7; 32]);
        let mut a: Vec<u32> = (1..=1000).collect();
        let mut b = a.clone();
        shuffle(&mut a, &seed);
        shuffle(&mut b, &seed);
        assert_eq!(a, b);
        let mut c: Vec<u32> = (1..=1000).collect();
        shuffle(&mut c, &Seed([8; 32]));
        assert_ne!(a, c);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (1..=1000).collect::<Vec<_>>(), "a permutation");
    }

    #[test]
    fn every_place_is_equally_likely() {
        // 3 entries, 60,000 shuffles with different seeds: each of the 6
        // orders about 10,000 times (a biased shuffle, like "swap with any
        // index", is off by thousands).
        let mut counts = std::collections::HashMap::new();
        for n in 0u32..60_000 {
            let mut bytes = [0u8; 32];
            bytes[..4].copy_from_slice(&n.to_le_bytes());
            let mut order = [1, 2, 3];
            shuffle(&mut order, &Seed(bytes));
            *counts.entry(order).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 6);
        for (order, count) in counts {
            assert!((9_400..=10_600).contains(&count), "{order:?}: {count}");
        }
    }

    #[test]
    fn seeds_round_trip_through_hex_and_hash_as_sha256() {
        let seed = Seed([0xab; 32]);
        assert_eq!(Seed::from_hex(&seed.hex()).unwrap(), seed);
        assert!(Seed::from_hex("abc").is_err());
        // SHA-256 of 32 zero bytes.
        assert_eq!(
            Seed([0; 32]).sha256_hex(),
            "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"
        );
        assert!(!format!("{seed:?}").contains(&seed.hex()));
    }

    #[test]
    fn a_bound_of_one_is_always_zero_and_no_index_reaches_the_bound() {
        let mut rng = ChaCha20Rng::from_seed([1; 32]);
        for bound in [1, 2, 3, 7, 1 << 40, u64::MAX] {
            for _ in 0..100 {
                assert!(below(&mut rng, bound) < bound);
            }
        }
    }
}
