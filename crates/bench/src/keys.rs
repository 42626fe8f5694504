//! Key choice: uniform, or YCSB's scrambled Zipfian.
//!
//! A Zipfian rank is drawn over the row count with skew `theta` (rejection-inversion sampling
//! from `rand_distr`, exact for every theta including 1.0, with no zeta table to precompute) and
//! scrambled with FNV-1a, as YCSB's `ScrambledZipfianGenerator` does, so that the popular keys
//! are spread over the key space instead of clustered at its start. `theta = 0` is uniform.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Zipf};

#[derive(Debug, Clone)]
pub struct KeyChooser {
    rows: u64,
    zipf: Option<Zipf<f64>>,
}

/// FNV-1a over the eight bytes of `value`, as YCSB's `fnvhash64`.
pub fn fnv1a64(value: u64) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in value.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
    }
    hash
}

impl KeyChooser {
    pub fn new(rows: u64, theta: f64) -> Result<KeyChooser, String> {
        if rows == 0 {
            return Err("rows must be at least 1".into());
        }
        if !(0.0..=1.5).contains(&theta) {
            return Err(format!("theta must be within 0.0..=1.5, got {theta}"));
        }
        let zipf = if theta > 0.0 {
            Some(Zipf::new(rows as f64, theta).map_err(|error| format!("zipf: {error}"))?)
        } else {
            None
        };
        Ok(KeyChooser { rows, zipf })
    }

    #[inline]
    pub fn next(&self, random: &mut impl Rng) -> u64 {
        match &self.zipf {
            None => random.random_range(0..self.rows),
            Some(zipf) => {
                let rank = zipf.sample(random) as u64 - 1;
                fnv1a64(rank) % self.rows
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{SeedableRng, rngs::SmallRng};

    #[test]
    fn skew_concentrates_accesses() {
        let mut random = SmallRng::seed_from_u64(7);
        let top_share = |theta: f64, random: &mut SmallRng| {
            let chooser = KeyChooser::new(10_000, theta).unwrap();
            let mut counts = vec![0u32; 10_000];
            for _ in 0..200_000 {
                counts[chooser.next(random) as usize] += 1;
            }
            counts.sort_unstable_by(|a, b| b.cmp(a));
            counts[..100].iter().sum::<u32>() as f64 / 200_000.0
        };
        let uniform = top_share(0.0, &mut random);
        let skewed = top_share(0.99, &mut random);
        assert!(uniform < 0.02, "uniform: the top 1% of keys get about 1%: {uniform}");
        assert!(skewed > 0.4, "theta 0.99: the top 1% of keys get most accesses: {skewed}");
    }
}
