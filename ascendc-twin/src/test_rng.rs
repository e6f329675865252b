//! xorshift64*: a fixed, dependency-free stream of generated test cases for the unit tests that
//! hold a mechanism against an independent oracle (hazard.rs, race.rs, dma.rs, lazy.rs).

/// The generator; its state is the seed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next number of the stream.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An index in `0..n`.
    pub(crate) fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}
