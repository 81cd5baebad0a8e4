//! The run's random choices (reservations, durations, the shuffle), reproducible from a seed.

/// A small deterministic generator (xorshift64*), so a run is reproducible without a crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_run_and_ranges_stay_inside_their_bounds() {
        let (mut a, mut b) = (Rng::new(0x5eed), Rng::new(0x5eed));
        let draws: Vec<u64> = (0..100).map(|_| a.range(10, 40)).collect();
        assert_eq!(draws, (0..100).map(|_| b.range(10, 40)).collect::<Vec<_>>());
        assert!(draws.iter().all(|d| (10..=40).contains(d)));
        assert_ne!(Rng::new(0).next_u64(), 0, "a zero seed still moves");
    }

    #[test]
    fn a_shuffle_is_a_permutation() {
        let mut items: Vec<usize> = (0..50).collect();
        Rng::new(3).shuffle(&mut items);
        assert_ne!(items, (0..50).collect::<Vec<_>>(), "shuffled");
        items.sort_unstable();
        assert_eq!(items, (0..50).collect::<Vec<_>>(), "nothing lost or repeated");
    }
}
